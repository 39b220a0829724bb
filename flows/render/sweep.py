"""``ragrig sweep`` in the terminal: one row per (config, test set) with the best one highlighted, the indexes
it built, the best config's overrides as ``--set`` flags, and the MLflow parent run."""

from __future__ import annotations

from typing import Any

from ragrig.eval.metrics import SWEEP_SUMMARY
from ragrig.eval.sweep.adapted import runnable
from ragrig.eval.sweep.spec import describe
from ragrig.flows.render.console import console, say, short, styled
from rich.table import Table


def print_sweep(result: dict[str, Any]) -> None:
    params: list[str] = []
    for r in result["rows"]:
        params += [k for k in r["overrides"] if k not in params]
    t = Table(title=f"sweep {result['name']}: {len(result['rows'])} evaluations in {result['seconds']['total']:.1f} s",
              title_justify="left")
    for p in params:
        t.add_column(p.split(".")[-1], no_wrap=True)
    t.add_column("test set", no_wrap=True)
    for m in SWEEP_SUMMARY:
        t.add_column(short(m), justify="right", no_wrap=True)
    best = result.get("best") or {}
    for r in result["rows"]:
        star = r["label"] == best.get("label") and r["testset"] == best.get("testset")
        vals = [str(r["overrides"].get(p, "")) for p in params]
        ms = [f"{r['metrics'].get(m, float('nan')):.4f}" for m in SWEEP_SUMMARY]
        t.add_row(*vals, r["testset"], *[styled(m, "bold green" if star else "") for m in ms])
    console.print(t)
    for ix in result.get("indexes", []):
        say(f"index {ix['index_key']}: {ix['chunks']} chunks, {ix['embedded']} embedded, {ix['cached']} from cache, "
            f"{ix['distinct_texts']} distinct chunk texts so far")
    if best:
        say(f"best by {result['metric']}: {best['label']} ({best['metrics'].get(result['metric'], 0):.4f})")
        trained = result.get("trained", {}).get(best["label"], {})
        say("  overrides: " + describe(runnable(best["overrides"], trained)))
        if trained:
            say("  trained by ragrig adapt: " + describe(trained))
    if result.get("parent_run_id"):
        say(f"mlflow parent run: {result['parent_run_id']}")
