"""``ragrig eval --case ID``: each chosen case with its query as processed, its expected sections (and where each
first ranks), its hits with relevance marks, hop and per-source ranks, and what each multi-hop hop decided."""

from __future__ import annotations

from typing import Any

from ragrig.eval.hop_diagnostics import GAIN
from ragrig.flows.render.console import console, line, say, styled
from ragrig.flows.render.query import ranked_by_any
from rich.table import Table



def print_cases(result: dict[str, Any]) -> None:
    index = f"{result['index']['key']}@{result['index']['version']}"
    for row in result["per_query"]:
        m = row["metrics"]
        console.print(line((row["id"], "bold"), f" ({result['testset']} on {index}): {row['query']}"))
        if row.get("normalized") and row["normalized"] != row["query"]:
            say(f"  normalised: {row['normalized']}")
        if row.get("expansions"):
            say(f"  expansions: {', '.join(row['expansions'])}")
        say(f"  nDCG@10 {m.get('ndcg@10', 0):.3f}  R@10 {m.get('recall@10', 0):.3f}  MRR@10 {m.get('mrr@10', 0):.3f}")
        for key, rank in (row.get("expected_ranks") or {k: None for k in row["expected"]}).items():
            where = "not in the ranking" if rank is None else f"first at rank {rank}"
            mark = styled("found", "green") if rank is not None and rank <= 10 else styled("missed@10", "red")
            console.print(line(f"  expected {key}: ", mark, f" ({where})"))
        t = Table(show_header=True, box=None, pad_edge=False)
        sources = ranked_by_any([h.get("sources", {}) for h in row["top"]])  # each one's rank of the hit
        for col in ("#", "rel", "hop", "score", *sources, "chunk", "section"):
            t.add_column(col, justify="right" if col in ("#", "hop", "score", *sources) else "left",
                         no_wrap=col != "section", overflow="fold")
        for h in row["top"]:
            src = h.get("sources", {})
            rel = styled("✓", "green") if h["relevant"] else styled("·", "dim")
            t.add_row(str(h["rank"]), rel, str(h["hop"]) if h["hop"] else "", f"{h['score']:.3f}",
                      *(str(src[s]) if s in src else "-" for s in sources), h["chunk_id"], h["header"])
        console.print(t)
        for hop in row.get("hops", []):
            if hop.get("error"):  # the judge failed at this hop: no decision, the hops ended there
                say(f"  hop {hop['hop']}: the judge failed ({hop['error']}); the hops ended here")
                continue
            decided = "can answer" if hop.get("can_answer") else f"asked for {', '.join(hop.get('asked', [])) or '-'}"
            found = ", ".join(hop.get("found", [])) or "no expected section"
            say(f"  hop {hop['hop']}: {decided} ({hop.get('reasoning', '')}); added {len(hop.get('added', []))} "
                f"chunk(s), found {found} (recall gain {hop.get(GAIN, 0.0):+.2f})")
        say()
