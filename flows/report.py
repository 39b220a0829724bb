"""Rendering run summaries for people: rich tables in the terminal, Markdown for artifacts."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

# a terminal gets its own width; a pipe or a CI log gets 120 columns, so numbers are never cut off
console = Console(stderr=False, highlight=False, width=None if sys.stdout.isatty() else 120)


def ingest_rows(stats: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("index", f"{stats['index_key']} @ {stats.get('version') or '-'}" + ("" if stats.get("published") else " (unchanged)")),
        ("documents seen", str(stats["docs_seen"])),
        ("  new / changed / unchanged", f"{stats['docs_new']} / {stats['docs_changed']} / {stats['docs_unchanged']}"),
        ("  removed / failed", f"{stats['docs_removed']} / {stats['docs_failed']}"),
        ("chunks", str(stats["chunks"])),
        ("  embedded / from cache", f"{stats['chunks_embedded']} / {stats['chunks_cached']}"),
        ("  over the model window", str(stats["chunks_over_window"])),
    ]
    secs = stats.get("seconds", {})
    for stage in ("discover", "plan", "extract", "chunk", "embed", "index", "publish", "total"):
        if stage in secs:
            rows.append((f"seconds: {stage}", f"{secs[stage]:.2f}"))
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
        console.print(f"[yellow]warning:[/yellow] {w}")
    print(f"index dir: {stats['index_dir']}")


def ingest_markdown(stats: dict[str, Any]) -> str:
    lines = ["| what | value |", "|---|---:|"]
    lines += [f"| {k.strip()} | {v} |" for k, v in ingest_rows(stats)]
    if stats.get("failures"):
        lines += ["", "**Failed documents**", "", "| document | stage | reason |", "|---|---|---|"]
        lines += [f"| {f['doc_id']} | {f['stage']} | {f['reason'].replace('|', '/')} |" for f in stats["failures"]]
    return "\n".join(lines)


HEADLINE = ("ndcg@10", "recall@10", "mrr@10", "precision@5", "hit_rate@5", "recall@100")
SHORT = {"ndcg": "nDCG", "recall": "R", "mrr": "MRR", "precision": "P", "hit_rate": "Hit", "map": "MAP"}


def short(key: str) -> str:
    name, _, k = key.partition("@")
    return f"{SHORT.get(name, name)}@{k}"


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def print_eval(result: dict[str, Any]) -> None:
    keys = [k for k in HEADLINE if k in result["overall"]]
    title = f"ragrig eval: {result['testset']} on {result['index']['key']}@{result['index']['version']}"
    table = Table(title=title, title_justify="left")
    table.add_column("tag", no_wrap=True)
    table.add_column("n", justify="right")
    for k in keys:
        table.add_column(short(k), justify="right", no_wrap=True)
    for tag, vals in result["per_tag"].items():
        table.add_row(tag, str(int(vals.get("n", 0))), *[_fmt(vals[k]) for k in keys])
    table.add_row("[bold]overall[/bold]", str(len(result["per_query"])), *[f"[bold]{_fmt(result['overall'][k])}[/bold]" for k in keys])
    console.print(table)
    lat = result.get("latency_ms", {})
    if lat:
        print(f"latency per query: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms (repeats: {result.get('repeats', 1)})")
    if result.get("variance"):
        print("variance across repeats: " + ", ".join(f"{k}={v:.4f}" for k, v in result["variance"].items()))
    if result.get("ragas"):
        print("ragas: " + ", ".join(f"{k}={v:.3f}" for k, v in result["ragas"].items()))
    failed = [r for r in result["per_query"] if r["missed@10"]]
    if failed:
        print(f"{len(failed)} of {len(result['per_query'])} cases missed an expected section in the top 10, e.g.:")
        for r in failed[:5]:
            print(f"  - {r['id']}: missed {', '.join(r['missed@10'])}")
    if result.get("mlflow_run_id"):
        print(f"mlflow run: {result['mlflow_run_id']}")


def eval_markdown(result: dict[str, Any]) -> str:
    keys = [k for k in HEADLINE if k in result["overall"]]
    lines = [f"### {result['testset']} on `{result['index']['key']}@{result['index']['version']}`", "",
             "| tag | n | " + " | ".join(keys) + " |", "|---|---:|" + "---:|" * len(keys)]
    for tag, vals in result["per_tag"].items():
        lines.append(f"| {tag} | {int(vals.get('n', 0))} | " + " | ".join(_fmt(vals[k]) for k in keys) + " |")
    lines.append(f"| **overall** | {len(result['per_query'])} | " + " | ".join(f"**{_fmt(result['overall'][k])}**" for k in keys) + " |")
    return "\n".join(lines)
