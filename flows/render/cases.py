"""``ragrig eval --case ID``: each chosen case with its query as processed, its expected sections (and where each
first ranks), its hits with relevance marks, hop and per-source ranks, and what each multi-hop hop decided."""

from __future__ import annotations

from typing import Any

from ragrig.eval.hop_diagnostics import GAIN
from ragrig.flows.render.console import console
from rich.markup import escape
from rich.table import Table

SOURCES = ("bm25", "vector", "header")  # each source's rank of the hit ("-": not among its candidates)


def print_cases(result: dict[str, Any]) -> None:
    index = f"{result['index']['key']}@{result['index']['version']}"
    for row in result["per_query"]:
        m = row["metrics"]
        console.print(f"[bold]{escape(row['id'])}[/bold] ({result['testset']} on {index}): {escape(row['query'])}")
        if row.get("normalized") and row["normalized"] != row["query"]:
            print(f"  normalised: {row['normalized']}")
        if row.get("expansions"):
            print(f"  expansions: {', '.join(row['expansions'])}")
        print(f"  nDCG@10 {m.get('ndcg@10', 0):.3f}  R@10 {m.get('recall@10', 0):.3f}  MRR@10 {m.get('mrr@10', 0):.3f}")
        for key, rank in (row.get("expected_ranks") or {k: None for k in row["expected"]}).items():
            where = "not in the ranking" if rank is None else f"first at rank {rank}"
            mark = "[green]found[/green]" if rank is not None and rank <= 10 else "[red]missed@10[/red]"
            console.print(f"  expected {escape(key)}: {mark} ({where})")
        t = Table(show_header=True, box=None, pad_edge=False)
        for col in ("#", "rel", "hop", "score", *SOURCES, "chunk", "section"):
            t.add_column(col, justify="right" if col in ("#", "hop", "score", *SOURCES) else "left",
                         no_wrap=col != "section", overflow="fold")
        for h in row["top"]:
            src = h.get("sources", {})
            rel = "[green]✓[/green]" if h["relevant"] else "[dim]·[/dim]"
            t.add_row(str(h["rank"]), rel, str(h["hop"]) if h["hop"] else "", f"{h['score']:.3f}",
                      *(str(src[s]) if s in src else "-" for s in SOURCES), escape(h["chunk_id"]), escape(h["header"]))
        console.print(t)
        for hop in row.get("hops", []):
            decided = "can answer" if hop["can_answer"] else f"asked for {', '.join(hop['asked']) or '-'}"
            found = ", ".join(hop["found"]) or "no expected section"
            print(f"  hop {hop['hop']}: {decided} ({hop['reasoning']}); added {len(hop['added'])} chunk(s), "
                  f"found {found} (recall gain {hop[GAIN]:+.2f})")
        print()
