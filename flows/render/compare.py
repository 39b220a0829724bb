"""``ragrig compare`` in the terminal: a table per candidate (green gains, red losses), the flipped queries,
and the warnings. The Markdown form is ``eval.compare.to_markdown``."""

from __future__ import annotations

from ragrig.eval.compare import Comparison, format_p
from ragrig.eval.stats import TIE
from ragrig.flows.render.console import console, say, styled
from rich.table import Table


def print_comparison(c: Comparison) -> None:
    t = Table(title=f"{c.candidate} vs {c.baseline} on {c.testset} ({c.n} queries)", title_justify="left")
    for col in ("metric", "baseline", "candidate", "Δ", "p perm", "p t", "W/T/L"):
        t.add_column(col, justify="left" if col == "metric" else "right", no_wrap=True)
    for m in c.metrics:
        color = "green" if m.delta > TIE else "red" if m.delta < -TIE else ""
        delta = styled(f"{m.delta:+.4f}", color)
        t.add_row(m.metric, f"{m.baseline:.4f}", f"{m.candidate:.4f}", delta, format_p(m.p_permutation),
                  format_p(m.p_ttest), f"{m.wins}/{m.ties}/{m.losses}")
    console.print(t)
    if c.search_note:
        say(c.search_note)
    if c.flips:
        say(f"flipped queries (relevant chunk in the top {c.k}):")
        for f in c.flips:
            say(f"  {f.direction:6s} {f.id}: first relevant rank {f.rank_before or '-'} -> {f.rank_after or '-'}")
    if c.hop_gains:
        say("recall gain per hop: " + ", ".join(
            f"hop {h} {g['baseline']:.4f} -> {g['candidate']:.4f}" for h, g in c.hop_gains.items()))
    if c.hop_changes:
        say(f"cases whose hops changed ({len(c.hop_changes)}):")
        for h in c.hop_changes:
            say(f"  {h['id']}:\n    before: {h['before']}\n    after:  {h['after']}")
    for w in c.warnings:
        say(f"warning: {w}")
