"""``ragrig gate`` in the terminal: a table of checks per test set, the reasons for every non-PASS, the flipped
queries, and the overall verdict. The Markdown and JUnit forms are in ``eval.gate``."""

from __future__ import annotations

from ragrig.eval.gate import BLOCK, PASS, WARN, GateResult, overall
from ragrig.flows.render.console import console, line, say, styled
from rich.table import Table

STYLE = {PASS: "green", WARN: "yellow", BLOCK: "bold red"}


def print_gate(results: list[GateResult]) -> None:
    for r in results:
        t = Table(title=line(f"ragrig gate: {r.testset} → ", (r.verdict, STYLE[r.verdict])), title_justify="left")
        holm = r.correction == "holm"
        cols = ("check", "n", "baseline", "candidate", "Δ", *(("p (Holm)", "p raw") if holm else ("p (perm)",)),
                "verdict")
        for col in cols:
            t.add_column(col, no_wrap=True, justify="left" if col in ("check", "verdict") else "right")
        for c in r.checks:
            ps = ["" if c.p is None else f"{c.p:.4f}"] + (["" if c.p_raw is None else f"{c.p_raw:.4f}"] if holm else [])
            t.add_row(c.name, "" if c.n is None else str(c.n),
                      "" if c.baseline is None else f"{c.baseline:.4f}",
                      "" if c.candidate is None else f"{c.candidate:.4f}",
                      "" if c.delta is None else f"{c.delta:+.4f}", *ps,
                      styled(c.verdict, STYLE[c.verdict]))
        console.print(t)
        say(f"  {r.p_note}")
        say(f"  {r.search_note}")
        for c in r.checks:
            if c.verdict != PASS:
                say(f"  {c.verdict}: {c.name}: {c.reason}")
        for fl in r.flips:
            say(f"  {fl['direction']:6s} {fl['id']}: first relevant rank "
                f"{fl['rank_before'] or '-'} -> {fl['rank_after'] or '-'}")
    say(f"verdict: {overall(results)}")
