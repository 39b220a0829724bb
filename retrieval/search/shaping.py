"""Shaping a query's selected candidates into hits, as pure functions over Hit lists: pinning the entities of a
comparison query, the adaptive cut, and section expansion."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.results import Hit


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
