"""Result shaping rules as pure functions: de-duplication keys and the adaptive cut."""

from __future__ import annotations

import hashlib
from typing import Any

from retrieval.results import Hit
from retrieval.types import Chunk


def dedup_key(chunk: Chunk) -> tuple[tuple[Any, ...], ...]:
    """Two hits are duplicates when their text is identical, or they are pieces of the same section."""
    text_key = ("text", hashlib.sha1(" ".join(chunk.text.split()).casefold().encode()).hexdigest())
    if chunk.part:
        return (text_key, ("section", chunk.doc_id, tuple(chunk.header_path), chunk.level))
    return (text_key,)


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
