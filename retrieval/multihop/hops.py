"""Multi-hop retrieval: retrieve, ask a judge what is missing, fetch it, repeat (up to ``max_hops``).

Each missing item is looked up as a header first (the section whose title names it), with hybrid
retrieval of the item text as the fallback. New chunks are tagged with their hop number and take the
last places of the context window (``retrieval.top_k``), in the order the judge asked for them: the
query's own best hits keep their ranks, and a hop that fetched something useless costs only the tail.
(Placing them right after the chunk that named them cost single-hop nDCG@10 0.881 -> 0.865 on SRD;
see docs/results.md.)

A batch of queries takes each hop together: the judge reads each query's context, then every hybrid retrieval
that any query's missing items may need is one ``search_many`` (``plan``), so an evaluation with hops stays a
batch. Hop hits are scored here only (``hop_scores``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
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
    from ragrig.retrieval.headers import HeaderIndex

log = logging.getLogger(__name__)


class HopIndex(Protocol):
    """What multi-hop needs from the index it searches (the retriever facade satisfies it)."""

    chunks: Sequence[Chunk]
    terms: TermIndex
    headers: HeaderIndex

    def row_of(self, chunk_id: str) -> int: ...

    def mask(self, filters: Filters | None) -> np.ndarray | None: ...

    def search_many(self, queries: Sequence[str], *, top_k: int | Sequence[int], retrieval: RetrievalConfig,
                    filters: Filters | None = None, max_hops: Sequence[int | None] | None = None
                    ) -> list[RetrievalResult]: ...


def make_judge(index: HopIndex, r: RetrievalConfig) -> HopJudge:
    if r.judge.kind == "llm":
        def titles(query: str) -> list[str]:
            named = index.headers.mentions(query, r.header_threshold, limit=20)
            return [m.title for m in named] + index.terms.terms_in(query)

        return LLMJudge(r.judge, header_titles=titles)
    return ReferenceJudge(index.terms, max_items=r.judge.max_items, anchored=r.judge.anchored)


def header_rows(index: HopIndex, item: Missing, r: RetrievalConfig, mask: np.ndarray | None) -> list[int]:
    """The rows that answer for a missing item by name, within the mask: the sections the keyword library
    says define it, else the sections whose header names it."""
    own = sorted(x for x in map(index.row_of, index.terms.sections_of(item.item)) if mask is None or mask[x])
    return own or [row for m in index.headers.lookup(item.item, r.header_threshold) for row in m.rows
                   if mask is None or mask[row]]


Found = dict[tuple[str, int], RetrievalResult]  # (item, top_k) -> the hybrid retrieval of the item's text


def fetch(index: HopIndex, item: Missing, have: set[str], r: RetrievalConfig, limit: int,
          mask: np.ndarray | None, found: Found,
          search: Callable[[str, int], RetrievalResult]) -> list[tuple[int, str]]:
    """Rows for one missing item, within the query's filters (``mask``): header matches first, hybrid
    retrieval of the item's text at depth ``limit + len(have)`` as the fallback, read from ``found`` (one batch
    for the hop: ``plan``), else ``search``ed alone."""
    rows = [(row, "header") for row in header_rows(index, item, r, mask) if index.chunks[row].chunk_id not in have]
    if not rows:
        k = limit + len(have)
        res = found.get((item.item, k))
        if res is None:  # planned deeper: its first k are this depth's when nothing reshapes the cut, else alone
            deeper = [x for (it, d), x in found.items() if it == item.item and d > k]
            res = (RetrievalResult(**{**deeper[0].__dict__, "hits": deeper[0].hits[:k]})
                   if deeper and not deeper[0].comparison and not r.section_expansion_tokens else search(item.item, k))
        rows = [(index.row_of(h.chunk_id), "search") for h in res.hits if h.chunk_id not in have]
    return rows[:limit]


def plan(index: HopIndex, missing: Sequence[Missing], have: set[str], r: RetrievalConfig,
         mask: np.ndarray | None) -> list[tuple[str, int]]:
    """The hybrid retrievals one query's hop may need, as (item, depth): an item whose header rows could all be
    in the context by the time it is fetched (each earlier item adds one chunk at most), at the depth it then
    asks for if every earlier item added one."""
    need = []
    for i, item in enumerate(missing):
        fresh = [x for x in header_rows(index, item, r, mask) if index.chunks[x].chunk_id not in have]
        if len(set(fresh)) <= i:
            need.append((item.item, 1 + len(have) + i))
    return need


def multi_hop(index: HopIndex, firsts: Sequence[RetrievalResult], r: RetrievalConfig, top_ks: Sequence[int],
              max_hops: Sequence[int], judge: HopJudge | None = None, filters: Filters | None = None,
              tails: Sequence[Sequence[tuple[str, float]]] | None = None) -> list[RetrievalResult]:
    """Extend hop-0 results with up to ``max_hops[q]`` hops each; judgements are recorded in ``result.hops``.
    The queries of a batch take each hop together: every hybrid retrieval a hop needs, for all of them, is one
    ``search_many``.

    Hops add context: a result keeps its ``top_k`` hop-0 hits and gains the chunks the hops fetched (placed
    in the context window, the hop-0 hits they displace moved after them, never dropped). Fetched chunks respect
    the query's ``filters``. A judge that fails (an LLM endpoint down) ends the query's hops with a warning: the
    result is what the hops so far gave, and ``hops`` records the error. ``tails[q]``: (chunk id, score) of the
    hop-0 ranking past ``firsts[q].hits`` (what ``hop_scores`` reads)."""
    judge = judge or make_judge(index, r)
    mask = index.mask(filters)
    hits: list[list[Hit]] = [list(f.hits) for f in firsts]
    hops: list[list[dict[str, Any]]] = [[] for _ in firsts]
    going = [h > 0 for h in max_hops]
    sub = r.model_copy(update={"max_hops": 0, "adaptive": r.adaptive.model_copy(update={"enabled": False})})

    def search(items: list[str], ks: list[int]) -> list[RetrievalResult]:
        return index.search_many(items, top_k=ks, retrieval=sub, filters=filters, max_hops=[0] * len(items))

    for hop in range(1, max(max_hops, default=0) + 1):
        asked: list[tuple[int, list[Missing], set[str], dict[str, Any], float]] = []
        for q, f in enumerate(firsts):
            if not going[q] or max_hops[q] < hop:
                continue
            t0 = time.perf_counter()
            window = min(top_ks[q], r.top_k)  # what an answering LLM would see; deeper hits can still be promoted
            context = hits[q][:window]
            try:
                j = judge.judge(f.query, context)
            except RagrigError as exc:
                log.warning("multi-hop judge failed, keeping the result so far: %s", exc, extra={"ragrig": {
                    "event": "retrieval.hop_error", "hop": hop, "error": str(exc)}})
                hops[q].append({"hop": hop, "error": str(exc), "added": [], "ms": (time.perf_counter() - t0) * 1000})
                going[q] = False
                continue
            record: dict[str, Any] = {"hop": hop, **j.to_dict(), "added": []}
            hops[q].append(record)
            if j.can_answer or not j.missing:
                record["ms"] = (time.perf_counter() - t0) * 1000
                going[q] = False
                continue
            asked.append((q, j.missing, {h.chunk_id for h in context}, record, time.perf_counter() - t0))
        wanted = list(dict.fromkeys(w for q, missing, have, _, _ in asked for w in plan(index, missing, have, r, mask)))
        t0 = time.perf_counter()
        found = dict(zip(wanted, search([w[0] for w in wanted], [w[1] for w in wanted]))) if wanted else {}
        share = (time.perf_counter() - t0) / max(1, len(asked))
        for q, missing, have, record, spent in asked:
            t0 = time.perf_counter()
            added: list[tuple[Hit, str | None]] = []
            for item in missing:
                if r.hop_chunks - len(added) <= 0:
                    break
                for row, how in fetch(index, item, have, r, 1, mask, found, lambda x, k: search([x], [k])[0]):
                    c = index.chunks[row]  # a named rule needs its own section, once
                    h = Hit.from_chunk(c, 0.0, hop=hop, reason=f"hop {hop}: {item.item} ({how})")
                    have.add(c.chunk_id)
                    added.append((h, item.origin))
                    record["added"].append({"chunk_id": c.chunk_id, "item": item.item, "via": how})
            if added:
                added.sort(key=lambda pair: 0 if pair[0].reason.endswith("(header)") else 1)  # header matches first
                hits[q] = place(hits[q], added, min(top_ks[q], r.top_k))
            else:
                going[q] = False
            record["ms"] = (spent + share + time.perf_counter() - t0) * 1000
    out = []
    for q, f in enumerate(firsts):
        res = RetrievalResult(**{**f.__dict__, "hits": hop_scores(hits[q], tails[q] if tails else ()),
                                 "hops": hops[q]})
        res.timings_ms = {**f.timings_ms, "hops": sum(x.get("ms", 0.0) for x in hops[q])}
        res.timings_ms["total"] = f.timings_ms.get("total", 0.0) + res.timings_ms["hops"]
        out.append(res)
    return out


def hop_scores(hits: list[Hit], tail: Sequence[tuple[str, float]] = ()) -> list[Hit]:
    """Each hop hit scored as the lowest hop-0 score of the ranking (``hits`` and the ``tail`` past them), a
    chunk a hop promoted left out: a hop hit ranks by its place, never by a score of its own."""
    hopped = {h.chunk_id for h in hits if h.hop}
    if hopped:
        own = [h.score for h in hits if not h.hop]
        floor = min(own + [sc for cid, sc in tail if cid not in hopped]) if own else 0.0
        for h in hits:
            if h.hop:
                h.score = floor
    return hits


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
