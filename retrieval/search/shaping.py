"""Result shaping rules as pure functions: de-duplication keys and the adaptive cut."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.results import Hit


def dedup_key(chunk: Chunk) -> tuple[tuple[Any, ...], ...]:
    """Two hits are duplicates when their text is identical, or they are pieces of the same section."""
    text_key = ("text", hashlib.sha1(" ".join(chunk.text.split()).casefold().encode()).hexdigest())
    if chunk.part:
        return (text_key, ("section", chunk.doc_id, tuple(chunk.header_path), chunk.level))
    return (text_key,)


def dedup_walk(keys: Sequence[tuple[tuple[Any, ...], ...]], prone: np.ndarray, top_k: int) -> tuple[np.ndarray, int]:
    """De-duplication of a ranking: a row is dropped when a kept row before it shares one of its ``keys``.
    Only ``prone`` rows (that share a key with some other row) are checked, and only until ``top_k`` rows
    are kept. Returns the keep mask and how many rows were dropped before that point."""
    keep = np.ones(len(keys), dtype=bool)
    seen: set[tuple[Any, ...]] = set()
    dropped = 0
    for i in np.nonzero(prone)[0].tolist():
        if i - dropped >= top_k:  # top_k rows kept before this one: nothing after it matters
            break
        if seen.isdisjoint(keys[i]):
            seen.update(keys[i])
        else:
            keep[i] = False
            dropped += 1
    return keep, dropped


def dedup_first_of_group(group: np.ndarray, top_k: int) -> tuple[np.ndarray, int]:
    """``dedup_walk`` when every row shares at most one key with the other rows: ``group[i]`` is that key's
    id (-1: none). A row is then dropped exactly when an earlier row of its group exists, and the first
    of each group is kept, so the walk is one ``np.unique``. Same mask and count as the walk."""
    keep = np.ones(len(group), dtype=bool)
    idx = np.nonzero(group >= 0)[0]
    if len(idx):
        _, first = np.unique(group[idx], return_index=True)
        keep[idx] = False
        keep[idx[first]] = True
    end = int(np.searchsorted(np.cumsum(keep), top_k))  # the top_k-th kept row (len: fewer are kept)
    keep[end + 1 :] = True  # the walk stops there
    return keep, int((~keep[:end]).sum())


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
