"""Selection after fusion, for a batch of queries at once: drop candidates whose calibrated relevance is below
``min_relevance`` (an absolute floor: ``calibration.py``), drop duplicates (identical text, or pieces of one
section: the first stays), keep each query's first ``limit``.

De-duplication is one ``np.unique`` over the batch when every candidate shares at most one key with the other
candidates of its query (then a row is dropped exactly when an earlier row of its group exists); a query where
some row shares two keys is walked in rank order instead. Both give the same mask (tests compare them).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.search.candidates import CandidateBatch, DedupKeys
from ragrig.retrieval.search.fusion import Fused


def dedup_walk(keys: Sequence[tuple[Hashable, ...]], prone: np.ndarray, limit: int | None) -> np.ndarray:
    """Keep mask of a ranking: a row is dropped when a kept row before it shares one of its ``keys``. Only
    ``prone`` rows (that share a key with some other row) are checked, and only until ``limit`` rows are kept
    (rows past that point are left kept: the cut removes them)."""
    keep = np.ones(len(keys), dtype=bool)
    seen: set[Hashable] = set()
    dropped = 0
    for i in np.nonzero(prone)[0].tolist():
        if limit is not None and i - dropped >= limit:
            break
        if seen.isdisjoint(keys[i]):
            seen.update(keys[i])
        else:
            keep[i] = False
            dropped += 1
    return keep


def dedup_first_of_group(group: np.ndarray) -> np.ndarray:
    """``dedup_walk`` when each row shares at most one key with the other rows: ``group[i]`` is that key's id
    (-1: none); the first row of each group is kept, the others dropped."""
    keep = np.ones(len(group), dtype=bool)
    idx = np.nonzero(group >= 0)[0]
    if len(idx):
        _, first = np.unique(group[idx], return_index=True)
        keep[idx] = False
        keep[idx[first]] = True
    return keep


@dataclass
class Selection:
    """Per query the kept candidates in rank order: element indices into the batch and their scores
    (query q's are ``[bounds[q]:bounds[q + 1]]``), how many duplicates were dropped before the cut, and after
    the rerank stage, per query each rescored chunk row's (cross-encoder rank, score)."""

    order: np.ndarray
    scores: np.ndarray
    bounds: np.ndarray
    dropped: np.ndarray
    rerank: list[dict[int, tuple[int, float]]] | None = None

    def of(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = int(self.bounds[q]), int(self.bounds[q + 1])
        return self.order[lo:hi], self.scores[lo:hi]


def select(batch: CandidateBatch, fused: Fused, r: RetrievalConfig, limits: Sequence[int | None],
           dedup: DedupKeys, relevance: np.ndarray | None = None) -> Selection:
    """Each query's candidates at or above the ``min_relevance`` floor (``relevance``: each batch element's
    calibrated relevance, needed when the floor is on), de-duplicated (if ``r.dedup``), cut at ``limits[q]``
    (None: no cut)."""
    order, scores = fused.order, fused.scores
    if r.min_relevance > 0:
        if relevance is None:
            raise ValueError("min_relevance needs each candidate's calibrated relevance")
        above = relevance[order] >= r.min_relevance
        order, scores = order[above], scores[above]
    n = len(batch)
    seg = batch.seg[order]
    starts = np.searchsorted(seg, np.arange(n + 1), side="left")
    keep = np.ones(len(order), dtype=bool)
    if r.dedup and len(order):
        groups = batch.groups()
        if groups is not None:
            keep = dedup_first_of_group(groups[order])
        else:
            first = batch.bounds()
            for q, c in enumerate(batch.sets):
                lo, hi = int(starts[q]), int(starts[q + 1])
                if hi == lo:
                    continue
                if c.group is not None:
                    keep[lo:hi] = dedup_first_of_group(c.group[order[lo:hi] - first[q]])
                else:
                    rows = batch.rows[order[lo:hi]]
                    keep[lo:hi] = dedup_walk([dedup.keys[x] for x in rows.tolist()], dedup.prone[rows], limits[q])
    # each row's rank among its query's kept rows, then the cut at the query's limit
    kept = np.concatenate([[0], np.cumsum(keep)])
    kept_before = kept[:-1] - kept[starts[:-1]][seg]
    cap = np.array([np.inf if lim is None else lim for lim in limits], dtype=float)
    within = kept_before < cap[seg]
    final = keep & within
    dropped = np.bincount(seg[~keep & within], minlength=n)
    order, scores, seg = order[final], scores[final], seg[final]
    return Selection(order, scores, np.searchsorted(seg, np.arange(n + 1), side="left"), dropped)
