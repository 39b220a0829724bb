"""Shaping a query's selected candidates into hits, as functions over Hit lists: the entity rows of comparison
queries, pinning them, the adaptive cut, and section expansion (``shape`` runs them in that order)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.results import Hit

if TYPE_CHECKING:
    import numpy as np
    from ragrig.retrieval.headers import HeaderIndex
    from ragrig.retrieval.index.chunk_table import ChunkTable
    from ragrig.retrieval.search.query import ProcessedQuery

Pins = list[tuple[str, int]]  # (entity, the chunk row that answers for it)


def entity_rows(processed: Sequence[ProcessedQuery], headers: HeaderIndex, threshold: float,
                mask: np.ndarray | None, top_fused: Callable[[list[str]], list[int | None]]) -> dict[int, Pins]:
    """For each comparison query, the best chunk of each entity it compares: a header match first, else the
    top fused candidate for the entity's name alone (``top_fused``: all such names of the batch in one call)."""
    found: dict[int, list[tuple[str, int | None]]] = {}
    subs: list[str] = []
    for q, pq in enumerate(processed):
        for entity in pq.comparison or []:
            row = next((x for m in headers.lookup(entity, threshold) for x in m.rows if mask is None or mask[x]), None)
            found.setdefault(q, []).append((entity, row))
            if row is None:
                subs.append(entity)
    tops = iter(top_fused(subs) if subs else [])  # in the order the names were collected
    return {q: [(e, row) for e, row in ((e, next(tops) if row is None else row) for e, row in pairs) if row is not None]
            for q, pairs in found.items()}


class Sections:
    """Each chunk's own section within its document (what section expansion brings)."""

    def __init__(self, chunks: ChunkTable) -> None:
        self.chunks = chunks

    def own(self, c: Chunk) -> list[Chunk]:
        """The chunks of ``c``'s own section, in document order: its other pieces and its subsections (none for
        text before a document's first header)."""
        n = len(c.header_path)
        if not n or c.level == 0:
            return []
        doc = [self.chunks[row] for row in self.chunks.doc_rows(c.doc_id)]
        return [x for x in doc if x.level >= c.level and x.header_path[:n] == c.header_path]


def shape(hits: list[Hit], pins: Pins, r: RetrievalConfig, k: int, make_hit: Callable[[int], Hit],
          chunks: Sequence[Chunk], rows: Mapping[str, int], sections: Sections) -> list[Hit]:
    """A query's hits pinned (``pins``; ``make_hit(row)`` for a pinned chunk not among them), cut at ``k``,
    cut adaptively and expanded to their sections, as ``r`` asks."""
    if pins:
        by_id = {h.chunk_id: h for h in hits}
        made: dict[int, Hit] = {}
        pinned = []
        for entity, row in pins:
            h = by_id.get(chunks[row].chunk_id)
            if h is None:
                h = made.get(row) or made.setdefault(row, make_hit(row))
            pinned.append((entity, h))
        hits = pin_entities(hits, pinned, k)
    hits = hits[:k]
    if r.adaptive.enabled:
        hits = adaptive_cut(hits, r.adaptive.min_results, min(r.adaptive.max_results, k), r.adaptive.gap)
    if r.section_expansion_tokens > 0:
        hits = expand_sections(hits, r.section_expansion_tokens, lambda cid: chunks[rows[cid]], sections.own)
    return hits


def pin_entities(hits: list[Hit], pinned: Sequence[tuple[str, Hit]], top_k: int) -> list[Hit]:
    """A comparison query keeps a hit for each entity it compares ("X vs Y": X's section and Y's), even when
    fusion ranked one of them below ``top_k``. ``pinned``: (entity, its hit) in query order; a hit already in
    ``hits`` stays where it is, the others go last; the rest of ``hits`` fills the remaining places."""
    pins: dict[str, Hit] = {}
    for entity, h in pinned:
        h.reason = f"comparison: {entity}"
        pins.setdefault(h.chunk_id, h)
    room = max(0, top_k - len(pins))
    rest = {h.chunk_id for h in hits if h.chunk_id not in pins}
    rest = set([h.chunk_id for h in hits if h.chunk_id in rest][:room])
    have = {h.chunk_id for h in hits}
    merged = [h for h in hits if h.chunk_id in pins or h.chunk_id in rest]
    return (merged + [h for cid, h in pins.items() if cid not in have])[:top_k]


def adaptive_cut(hits: list[Hit], min_results: int, max_results: int, gap: float) -> list[Hit]:
    """Keep hits up to the largest score drop, if that drop is at least ``gap`` of the top score.

    The cut falls between ``min_results`` and ``max_results`` hits; no big drop -> ``max_results``.
    """
    hits = hits[:max_results]
    if len(hits) <= min_results or not hits or hits[0].score <= 0:
        return hits
    top = hits[0].score
    best_i, best_gap = None, 0.0
    for i in range(min_results - 1, len(hits) - 1):
        drop = (hits[i].score - hits[i + 1].score) / top
        if drop > best_gap:
            best_i, best_gap = i, drop
    if best_i is not None and best_gap >= gap:
        return hits[: best_i + 1]
    return hits


def expand_sections(hits: list[Hit], budget: int, chunk_of: Callable[[str], Chunk],
                    section: Callable[[Chunk], Sequence[Chunk]]) -> list[Hit]:
    """A matched chunk brings the rest of its own section (``section(chunk)``: its other pieces, then its
    subsections, in document order) right after it, while the hit and what it brought fit ``budget`` tokens
    (a piece that does not fit is skipped; a later, smaller one may still fit)."""
    out: list[Hit] = []
    have = {h.chunk_id for h in hits}
    for h in hits:
        out.append(h)
        c = chunk_of(h.chunk_id)
        if c.tokens >= budget:
            continue
        used = c.tokens
        for s in section(c):
            if s.chunk_id in have or used + s.tokens > budget:
                continue
            used += s.tokens
            have.add(s.chunk_id)
            out.append(Hit.from_chunk(s, h.score, reason=f"section of {h.chunk_id}"))
    return out
