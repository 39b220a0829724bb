"""``ragrig query`` in the terminal: the ranked hits with their rank in each source that ranked one of them
(``configs.sources.RANK_NAMES``: every retrieval source, then the rerank stage), and with ``--debug`` the processed
query, candidate counts, hops and timings."""

from __future__ import annotations

from typing import Any

from ragrig.configs.sources import RANK_NAMES
from ragrig.flows.render.console import console, line, say
from ragrig.retrieval.results import RetrievalResult
from rich.table import Table


def print_query(res: RetrievalResult, index_key: str, debug: bool = False) -> None:
    table = Table(title=f"{res.query!r} @ {index_key}@{res.version}", title_justify="left")
    ranked_by = ranked_by_any([h.sources for h in res.hits])
    for col, just in (("#", "right"), ("header path", "left"), ("doc", "left"), ("score", "right"),
                      *((s, "right") for s in ranked_by)):
        table.add_column(col, justify=just, overflow="fold")
    for i, h in enumerate(res.hits, 1):
        ranks = ["-" if h.rank_in(s) is None else str(h.rank_in(s)) for s in ranked_by]
        table.add_row(str(i), line(h.header, *((f"  ({h.reason})", "dim"),) if h.reason else ()), h.doc_id,
                      f"{h.score:.3f}", *ranks)
    console.print(table)
    if debug:
        say(f"normalised query: {res.normalized}")
        expanded = f"  (expanded: {', '.join(res.expansions)})" if res.expansions else ""
        say(f"bm25 query:       {res.bm25_query}{expanded}")
        if res.comparison:
            say(f"comparison of:    {' | '.join(res.comparison)}")
        say("candidates:       " + ", ".join(f"{k}={v}" for k, v in res.candidates.items()))
        for hop in res.hops:
            if hop.get("error"):  # the judge failed: no decision at this hop, the hops ended with what they had
                say(f"hop {hop['hop']}:            the judge failed, hops ended — {hop['error']}")
                continue
            state = ("can answer" if hop.get("can_answer")
                     else "missing: " + ", ".join(m["item"] for m in hop.get("missing", [])))
            say(f"hop {hop['hop']}:            {state} — {hop.get('reasoning', '')}")
            for a in hop.get("added", []):
                say(f"                  + {a['chunk_id']} for '{a['item']}' (via {a['via']})")
        say("timings (ms):     " + ", ".join(f"{k}={v:.1f}" for k, v in res.timings_ms.items()))


def ranked_by_any(sources: list[Any]) -> list[str]:
    """The sources and stages (``RANK_NAMES``, in that order) that ranked at least one of the hits, given each
    hit's ``sources`` mapping: the rank columns of a table ("-" where one did not rank that hit)."""
    return [s for s in RANK_NAMES if any(s in src for src in sources)]
