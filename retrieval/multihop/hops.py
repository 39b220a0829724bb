"""Multi-hop retrieval: retrieve, ask a judge what is missing, fetch it, repeat (up to ``max_hops``).

Each missing item is looked up as a header first (the section whose title names it), with hybrid
retrieval of the item text as the fallback. New chunks are tagged with their hop number and take the
last places of the context window (``retrieval.top_k``), in the order the judge asked for them: the
query's own best hits keep their ranks, and a hop that fetched something useless costs only the tail.
(Placing them right after the chunk that named them cost single-hop nDCG@10 0.881 -> 0.865 on SRD;
see docs/results.md.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.multihop.judges import HopJudge, Missing, ReferenceJudge
from ragrig.retrieval.multihop.llm_judge import LLMJudge
from ragrig.retrieval.multihop.terms import TermIndex
from ragrig.retrieval.results import Hit, RetrievalResult

if TYPE_CHECKING:
    from ragrig.retrieval.filters import Filters

log = logging.getLogger(__name__)


class HopIndex(Protocol):
    """What multi-hop needs from the index it searches (the retriever facade satisfies it)."""

    chunks: Sequence[Chunk]
    terms: TermIndex

    def row_of(self, chunk_id: str) -> int: ...

    def header_rows(self, name: str, threshold: float) -> list[int]: ...

    def header_titles(self, query: str, threshold: float, limit: int) -> list[str]: ...

    def mask(self, filters: Filters | None) -> np.ndarray | None: ...

    def search(self, query: str, *, top_k: int, retrieval: RetrievalConfig,
               filters: Filters | None = None) -> RetrievalResult: ...


def make_judge(index: HopIndex, r: RetrievalConfig) -> HopJudge:
    if r.judge.kind == "llm":
        def titles(query: str) -> list[str]:
            return index.header_titles(query, r.header_threshold, 20) + index.terms.terms_in(query)

        return LLMJudge(r.judge, header_titles=titles)
    return ReferenceJudge(index.terms, max_items=r.judge.max_items, anchored=r.judge.anchored)


def fetch(index: HopIndex, item: Missing, have: set[str], r: RetrievalConfig, limit: int,
          filters: Filters | None = None) -> list[tuple[int, str]]:
    """Rows for one missing item, within the query's filters: header matches first, hybrid retrieval as the
    fallback."""
    mask = index.mask(filters)
    rows: list[tuple[int, str]] = []
    own = [index.row_of(cid) for cid in index.terms.sections_of(item.item)]
    own = sorted(x for x in own if mask is None or mask[x])
    for row in own:
        if index.chunks[row].chunk_id not in have:
            rows.append((row, "header"))
    if not own:
        for row in index.header_rows(item.item, r.header_threshold):
            if (mask is None or mask[row]) and index.chunks[row].chunk_id not in have:
                rows.append((row, "header"))
    if not rows:
        sub = r.model_copy(update={"max_hops": 0, "adaptive": r.adaptive.model_copy(update={"enabled": False})})
        res = index.search(item.item, top_k=limit + len(have), retrieval=sub, filters=filters)
        rows = [(index.row_of(h.chunk_id), "search") for h in res.hits if h.chunk_id not in have]
    return rows[:limit]


def multi_hop(index: HopIndex, first: RetrievalResult, r: RetrievalConfig, top_k: int, max_hops: int,
              judge: HopJudge | None = None, filters: Filters | None = None) -> RetrievalResult:
    """Extend a hop-0 result with up to ``max_hops`` hops; judgements are recorded in ``result.hops``.

    Hops add context: the result keeps its ``top_k`` hop-0 hits and gains the chunks the hops fetched (placed
    in the context window, the hop-0 hits they displace moved after them, never dropped). Fetched chunks respect
    the query's ``filters``. A judge that fails (an LLM endpoint down) ends the hops with a warning: the result
    is what the hops so far gave, and ``hops`` records the error."""
    judge = judge or make_judge(index, r)
    hits: list[Hit] = list(first.hits)
    hops: list[dict[str, Any]] = []
    window = min(top_k, r.top_k)  # what an answering LLM would see; deeper hits can still be promoted
    for hop in range(1, max_hops + 1):
        t0 = time.perf_counter()
        context = hits[:window]
        try:
            j = judge.judge(first.query, context)
        except RagrigError as exc:
            log.warning("multi-hop judge failed, keeping the result so far: %s", exc, extra={"ragrig": {
                "event": "retrieval.hop_error", "hop": hop, "error": str(exc)}})
            hops.append({"hop": hop, "error": str(exc), "added": [], "ms": (time.perf_counter() - t0) * 1000})
            break
        record: dict[str, Any] = {"hop": hop, **j.to_dict(), "added": []}
        hops.append(record)
        if j.can_answer or not j.missing:
            record["ms"] = (time.perf_counter() - t0) * 1000
            break
        have = {h.chunk_id for h in context}
        added: list[tuple[Hit, str | None]] = []
        for item in j.missing:
            room = r.hop_chunks - len(added)
            if room <= 0:
                break
            for row, how in fetch(index, item, have, r, 1, filters):  # a named rule needs its own section, once
                c = index.chunks[row]
                h = Hit.from_chunk(c, 0.0, hop=hop, reason=f"hop {hop}: {item.item} ({how})")
                have.add(c.chunk_id)
                added.append((h, item.origin))
                record["added"].append({"chunk_id": c.chunk_id, "item": item.item, "via": how})
        if not added:
            record["ms"] = (time.perf_counter() - t0) * 1000
            break
        added.sort(key=lambda pair: 0 if pair[0].reason.endswith("(header)") else 1)  # header matches first
        hits = place(hits, added, window)
        record["ms"] = (time.perf_counter() - t0) * 1000
    final = hits  # the hop-0 hits (at most top_k) and every chunk the hops added
    for h in final:
        if h.hop and not h.score:
            h.score = min((x.score for x in final if not x.hop), default=0.0)
    out = RetrievalResult(**{**first.__dict__, "hits": final, "hops": hops})
    out.timings_ms = {**first.timings_ms, "hops": sum(x.get("ms", 0.0) for x in hops)}
    out.timings_ms["total"] = first.timings_ms.get("total", 0.0) + out.timings_ms["hops"]
    return out


def place(hits: list[Hit], added: list[tuple[Hit, str | None]], window: int) -> list[Hit]:
    """Put the new hits in the last places of the context window, after the hits of earlier hops (a chunk
    already ranked lower moves up instead of appearing twice); the hop-0 hits they displace keep their
    order after them. At least half the window stays with hop-0 hits."""
    moving = {h.chunk_id for h, _ in added}
    rest = [h for h in hits if h.chunk_id not in moving]
    hopped = [h for h in rest[:window] if h.hop > 0]
    first = [h for h in rest if h.hop == 0]
    # hops never take more than half the window: the query's own best hits stay in front
    keep = max(window - len(hopped) - len(added), min(len(first), (window + 1) // 2))
    return first[:keep] + hopped + [h for h, _ in added] + first[keep:] + [h for h in rest[window:] if h.hop > 0]
