"""Test sets that live with the corpus, in the terminal: the stale-case check, the index diff with its touched
cases, and the drafts. The Markdown forms are in ``eval.lifecycle`` (check, diff)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ragrig.eval.lifecycle.check import CheckReport
from ragrig.eval.lifecycle.diff import DELTA_METRICS, MOVED, VersionDiff
from ragrig.eval.lifecycle.yaml_write import WriteSummary
from ragrig.eval.relevance import CHANGED, GONE, OK, section_key
from ragrig.flows.render.console import console, line, say, styled
from rich.table import Table

STYLE = {OK: "green", MOVED: "cyan", CHANGED: "yellow", GONE: "bold red"}


def print_check(report: CheckReport) -> None:
    against = f", reference {report.reference_version}" if report.reference_version else ", no reference version"
    counts: list[object] = []
    for s, n in report.counts.items():
        counts += [", "] if counts else []
        counts.append((f"{n} {s}", STYLE[s]))
    console.print(line((f"testset check: {report.testset}", "bold"), f" on {report.version}{against}: ", *counts))
    flagged = [c for c in report.cases if c.status != OK]
    if not flagged:
        return
    t = Table(show_header=True, title_justify="left")
    for col in ("case", "status", "expectation", "now / why"):
        t.add_column(col, overflow="fold")
    for c in flagged:
        for e in c.expectations:
            if e.status == OK:
                continue
            if e.status == MOVED:
                detail = f"-> {e.now_doc}" + (f" § {e.now_section}" if e.now_section else "")
            elif e.status == CHANGED:
                detail = "\n".join(e.diff)
            else:
                detail = e.reason
            label = e.status.upper() if e.status == GONE else e.status
            t.add_row(c.id + (" (draft)" if c.draft else ""), styled(label, STYLE[e.status]),
                      section_key(e.doc, e.section), detail)
    console.print(t)


def print_write(s: WriteSummary) -> None:
    if not s.changed_anything:
        say(f"{s.path}: nothing to write")
        return
    say(f"wrote {s.path}: {s.moved} expectation(s) re-anchored, {s.fingerprinted} fingerprint(s) written, "
        f"{s.accepted} edit(s) accepted" + ("" if s.exact_layout else
                                             " (the file's indentation could not be kept exactly; comments and "
                                             "order were)"))


def print_diff(diff: VersionDiff, max_rows: int = 25) -> None:
    t = Table(title=f"ragrig diff: {diff.index_key} {diff.old_version} -> {diff.new_version}", title_justify="left")
    for col in ("", "added", "changed", "moved", "removed", "unchanged"):
        t.add_column(col, justify="left" if not col else "right")
    for what, same in (("documents", diff.unchanged_documents), ("chunks", diff.unchanged_chunks)):
        n = diff.counts(what)
        t.add_row(what, *(str(n[k]) for k in ("added", "changed", "moved", "removed")), str(same))
    console.print(t)
    for d in diff.documents[:max_rows]:
        say(f"  document {d.change:8s} {d.doc_id}" + (f" (from {d.old_id})" if d.old_id else ""))
    for c in diff.chunks[:max_rows]:
        ids = f"{c.old} -> {c.new}" if c.change == MOVED else (c.new or c.old)
        say(f"  chunk    {c.change:8s} {ids}  [{c.header}]")
        for line in c.diff:
            say(f"             {line}")
    if len(diff.chunks) > max_rows:
        say(f"  ({len(diff.chunks) - max_rows} more changed chunks: --output-json has them all)")
    for ts in diff.testsets:
        if not ts.touched:
            say(f"{ts.testset}: no case touches a changed chunk")
            continue
        tt = Table(title=f"{ts.testset}: {len(ts.touched)} of {ts.n_cases} cases touch the changes (via: their "
                         "expected sections (exp) or their top 10 (top10); metrics: before>after change)",
                   title_justify="left")
        for col in ("case", "check", "via", *DELTA_METRICS):
            tt.add_column(col, no_wrap=True, min_width=26 if col == "case" else None)
        for c in ts.touched:
            cells = []
            for m in DELTA_METRICS:
                if m in c.before and m in c.after:
                    d = c.after[m] - c.before[m]
                    color = "green" if d > 1e-9 else "red" if d < -1e-9 else ""
                    text = f"{c.before[m]:.3f}>{c.after[m]:.3f} {d:+.3f}"
                    cells.append(styled(text, color))
                else:
                    cells.append("-")
            status = c.status or ""
            via = "+".join({"expected": "exp", "retrieved": "top10"}[v] for v in c.via)
            tt.add_row(c.id, styled(status, STYLE.get(status, "")), via, *cells)
        console.print(tt)
        for label, cmp in (("touched cases", ts.paired), ("all cases", ts.overall)):
            if cmp:
                say(f"  paired over {label} (n={cmp['n']}): " + "; ".join(
                    f"{m['metric']} {m['delta']:+.4f} (p={m['p_permutation']:.4f})" for m in cmp["metrics"]))


def print_drafts(summary: dict[str, Any]) -> None:
    kinds = Counter(summary["kinds"])
    say(f"{summary['drafts']} drafts ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}) from "
        f"{summary['index']}; {summary['resolved']} resolve against it")
    if summary.get("description"):
        say(f"  {summary['description']}")
    if summary.get("output"):
        say(f"wrote {summary['output']}: every case is marked draft: true (eval and the gate skip it until a "
            "person removes the mark)")
