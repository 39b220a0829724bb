"""An ingest run's summary: a terminal table (and failures, warnings), and Markdown for the flow's artifact."""

from __future__ import annotations

from typing import Any

from ragrig.flows.render.console import console, line, say
from rich.table import Table


def ingest_rows(stats: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("index", f"{stats['index_key']} @ {stats.get('version') or '-'}"
                  + ("" if stats.get("published") else " (unchanged)")),
        ("documents seen", str(stats["docs_seen"])),
        ("  new / changed / unchanged", f"{stats['docs_new']} / {stats['docs_changed']} / {stats['docs_unchanged']}"),
        ("  removed / failed", f"{stats['docs_removed']} / {stats['docs_failed']}"),
        ("chunks", str(stats["chunks"])),
        ("  embedded / from cache", f"{stats['chunks_embedded']} / {stats['chunks_cached']}"),
        ("  over the model window", str(stats["chunks_over_window"])),
        *((f"  view {name}: newly embedded", str(n)) for name, n in stats.get("views_embedded", {}).items()),
    ]
    secs = stats.get("seconds", {})
    # partitions: the stage's wall; extract, chunk (in this process) or workers:* (Dask): the partitions' own
    for stage in ("discover", "plan", "partitions", "extract", "chunk", "workers:extract", "workers:chunk",
                  "workers:embed", "workers:chroma", "embed", "views", "vectors", "index", "index:tables", "index:bm25",
                  "index:reader", "index:vectors", "index:chroma", "publish", "total"):
        if stage in secs:
            rows.append((f"seconds: {stage}" if ":" not in stage or "workers" in stage
                         else f"  {stage.split(':')[1]}", f"{secs[stage]:.2f}"))
    return rows


def print_ingest(stats: dict[str, Any]) -> None:
    table = Table(title="ragrig ingest", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    for k, v in ingest_rows(stats):
        table.add_row(k, v)
    console.print(table)
    if stats.get("failures"):
        ft = Table(title=f"failed documents ({len(stats['failures'])})", title_justify="left")
        for col in ("document", "stage", "reason"):
            ft.add_column(col, overflow="fold")
        for f in stats["failures"][:50]:
            ft.add_row(f["doc_id"], f["stage"], f["reason"])
        console.print(ft)
    for w in stats.get("warnings", [])[:20]:
        console.print(line(("warning:", "yellow"), f" {w}"))
    say(f"index dir: {stats['index_dir']}")


def ingest_markdown(stats: dict[str, Any]) -> str:
    lines = ["| what | value |", "|---|---:|"]
    lines += [f"| {k.strip()} | {v} |" for k, v in ingest_rows(stats)]
    if stats.get("failures"):
        lines += ["", "**Failed documents**", "", "| document | stage | reason |", "|---|---|---|"]
        lines += [f"| {f['doc_id']} | {f['stage']} | {f['reason'].replace('|', '/')} |" for f in stats["failures"]]
    return "\n".join(lines)
