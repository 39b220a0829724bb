"""``ragrig query`` in the terminal: the ranked hits with their per-source ranks, and with ``--debug`` the
processed query, candidate counts, hops and timings."""

from __future__ import annotations

from ragrig.flows.render.console import console, line
from ragrig.retrieval.results import RetrievalResult
from rich.table import Table


def print_query(res: RetrievalResult, index_key: str, debug: bool = False) -> None:
    table = Table(title=f"{res.query!r} @ {index_key}@{res.version}", title_justify="left")
    for col, just in (("#", "right"), ("header path", "left"), ("doc", "left"), ("score", "right"),
                      ("bm25", "right"), ("vector", "right"), ("header", "right")):
        table.add_column(col, justify=just, overflow="fold")
    for i, h in enumerate(res.hits, 1):
        ranks = ["-" if h.rank_in(s) is None else str(h.rank_in(s)) for s in ("bm25", "vector", "header")]
        table.add_row(str(i), line(h.header, *((f"  ({h.reason})", "dim"),) if h.reason else ()), h.doc_id,
                      f"{h.score:.3f}", *ranks)
    console.print(table)
    if debug:
        print(f"normalised query: {res.normalized}")
        expanded = f"  (expanded: {', '.join(res.expansions)})" if res.expansions else ""
        print(f"bm25 query:       {res.bm25_query}{expanded}")
        if res.comparison:
            print(f"comparison of:    {' | '.join(res.comparison)}")
        print("candidates:       " + ", ".join(f"{k}={v}" for k, v in res.candidates.items()))
        for hop in res.hops:
            if hop.get("error"):  # the judge failed: no decision at this hop, the hops ended with what they had
                print(f"hop {hop['hop']}:            the judge failed, hops ended — {hop['error']}")
                continue
            state = ("can answer" if hop.get("can_answer")
                     else "missing: " + ", ".join(m["item"] for m in hop.get("missing", [])))
            print(f"hop {hop['hop']}:            {state} — {hop.get('reasoning', '')}")
            for a in hop.get("added", []):
                print(f"                  + {a['chunk_id']} for '{a['item']}' (via {a['via']})")
        print("timings (ms):     " + ", ".join(f"{k}={v:.1f}" for k, v in res.timings_ms.items()))
