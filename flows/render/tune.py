"""``ragrig tune`` in the terminal: a progress bar over the candidates' evaluations, then the fold table, the
held-out estimate beside the default's, the per-tag effect and the verdict."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ragrig.eval.sweep.adapted import runnable
from ragrig.eval.sweep.spec import describe
from ragrig.flows.render.console import console, say, short
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


@contextmanager
def progress_bar(total: int, quiet: bool = False) -> Iterator[Callable[[int, int, str], None] | None]:
    if quiet:
        yield None
        return
    with Progress(TextColumn("tune"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task("", total=total)

        def step(done: int, n: int, label: str) -> None:
            bar.update(task, completed=done, total=n, description=label[:60])

        yield step


def _ci(ci: list[float]) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def print_tune(r: dict[str, Any]) -> None:
    m = short(r["metric"])
    t = Table(title=f"tune {r['name']}: {len(r['candidates'])} candidates x {r['cases']} cases, {r['folds']} folds "
              f"(seed {r['seed']}) in {r['seconds'].get('total', 0):.1f} s", title_justify="left")
    t.add_column("candidate")
    for i in range(r["folds"]):
        t.add_column(f"fold {i + 1}", justify="right")
    t.add_column(f"all {m}", justify="right")
    t.add_column("chosen", justify="right")
    for c in r["candidates"]:
        style = "bold green" if c["label"] == r["winner"] else ""
        t.add_row(c["label"], *[f"{v:.4f}" for v in c["fold_means"]], f"{c['mean']:.4f}", str(c["chosen"]),
                  style=style)
    console.print(t)
    say(f"held-out {m} (nested CV): {r['estimate']:.4f} {_ci(r['estimate_ci'])}; default on the same folds "
        f"{r['default_estimate']:.4f} {_ci(r['default_ci'])}")
    say(f"gain {r['gain']:+.4f} {_ci(r['gain_ci'])}, paired permutation p={r['p']:.3g} (alpha {r['alpha']})")
    tags = Table(title="per tag (held out)", title_justify="left")
    for col in ("tag", "n", "tuned", "default", "gain", "p"):
        tags.add_column(col, justify="left" if col == "tag" else "right")
    for tag, v in r["per_tag"].items():
        tags.add_row(tag, str(int(v["n"])), f"{v['tuned']:.4f}", f"{v['default']:.4f}", f"{v['gain']:+.4f}",
                     f"{v['p']:.3g}")
    console.print(tags)
    h = r.get("holdout")
    if h:
        say(f"honesty check: tuned on {h['tune_cases']} cases, pick '{h['pick']}' scores {h['held_score']:.4f} on "
            f"the {h['held_cases']} held out (default {h['held_default']:.4f}); estimate {h['estimate']:.4f} "
            f"{_ci(h['estimate_ci'])} {'contains it' if h['within'] else 'does NOT contain it'}")
        say(f"  gain over the default on the held-out cases {h['held_gain']:+.4f}; estimated gain {h['gain']:+.4f} "
            f"{_ci(h['gain_ci'])} {'contains it' if h['gain_within'] else 'does NOT contain it'}")
    runs = r.get("holdout_runs") or []
    if len(runs) > 1:
        hs = Table(title=f"honesty check per seed (fraction {runs[0]['fraction']})", title_justify="left")
        for col in ("seed", "pick", "held-out score", "default", "estimate [95%]", "", "held-out gain",
                    "estimated gain [95%]", ""):
            hs.add_column(col, justify="left" if col in ("pick", "") else "right")
        for x in runs:
            hs.add_row(str(x["seed"]), x["pick"], f"{x['held_score']:.4f}", f"{x['held_default']:.4f}",
                       f"{x['estimate']:.4f} {_ci(x['estimate_ci'])}", "inside" if x["within"] else "OUTSIDE",
                       f"{x['held_gain']:+.4f}", f"{x['gain']:+.4f} {_ci(x['gain_ci'])}",
                       "inside" if x["gain_within"] else "OUTSIDE")
        console.print(hs)
        say(f"held-out score inside its estimate's interval for {sum(x['within'] for x in runs)} of {len(runs)} "
            f"seeds; held-out gain inside the estimated gain's for {sum(x['gain_within'] for x in runs)} of "
            f"{len(runs)}")
    say(r["verdict"] + (f"; written to {r['written']}" if r.get("written") else "; nothing written"))
    if r["significant"]:
        say("  overrides: " + describe(runnable(r["winner_overrides"], r.get("winner_trained") or {})))
        if r.get("winner_trained"):
            say("  trained by ragrig adapt: " + describe(r["winner_trained"]))
    if r.get("parent_run_id"):
        say(f"mlflow parent run: {r['parent_run_id']}")
