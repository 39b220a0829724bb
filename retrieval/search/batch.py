"""Fusion and selection for many queries in one array pass (sweeps, over memoised candidates).

A sweep evaluates many fusion configs over the same candidates. Per query, ``Retriever._fuse_arrays``
and ``_cut_arrays`` already work on arrays; this module does the same arithmetic for all queries at
once on their candidates laid end to end (one segment per query), so a config costs a few numpy calls
instead of a few per query. Scores are the per-query path's term for term (each element goes through
the same operations in the same order), so rankings and ties are bit-identical; tests compare both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.search.fusion import max_score
from ragrig.retrieval.search.shaping import dedup_first_of_group


class CandidateArrays(Protocol):
    """One query's candidates (``retriever._Candidates``): ids in id order, rows, per-source (rank, present),
    normalised scores per (source, method), and the de-duplication group of each row (-1: none)."""

    ids: list[str]
    rows: np.ndarray
    ranks: dict[str, tuple[np.ndarray, np.ndarray]]
    group: np.ndarray | None


@dataclass
class FlatCandidates:
    """Every query's candidates end to end: ``seg[i]`` is the query of element i; within a segment the
    elements keep their id order (the tie-break)."""

    sources: list[str]
    seg: np.ndarray
    rows: np.ndarray
    ranks: dict[str, np.ndarray]  # 0 where absent
    has: dict[str, np.ndarray]
    present: list[tuple[str, ...]]  # per query: the sources that returned anything, in run order
    group: np.ndarray  # a de-duplication group id unique across queries, -1: none
    normed: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.present)


def flatten(cands: Sequence[CandidateArrays], present: Sequence[Sequence[str]]) -> FlatCandidates:
    """Lay the queries' candidates end to end. Every ``cands[i].group`` must be an array (not None)."""
    sources: list[str] = []
    for ps in present:
        for s in ps:
            if s not in sources:
                sources.append(s)
    lens = np.array([len(c.ids) for c in cands], dtype=np.int64)
    seg = np.repeat(np.arange(len(cands), dtype=np.int64), lens)

    def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

    rows = cat([c.rows for c in cands], np.int64)
    ranks, has = {}, {}
    for s in sources:
        ranks[s] = cat([c.ranks[s][0] if s in c.ranks else np.zeros(len(c.ids)) for c in cands], np.float64)
        has[s] = cat([c.ranks[s][1] if s in c.ranks else np.zeros(len(c.ids), dtype=bool) for c in cands], bool)
    groups = []
    offset = 0
    for c in cands:
        g = c.group
        assert g is not None, "flatten needs each query's de-duplication groups"
        groups.append(np.where(g >= 0, g + offset, -1))
        offset += int(g.max()) + 1 if len(g) else 0
    return FlatCandidates(sources, seg, rows, ranks, has, [tuple(p) for p in present], cat(groups, np.int64))


def _segment_bounds(seg: np.ndarray, n: int) -> np.ndarray:
    """Start offsets of each of ``n`` segments in a sorted ``seg`` (n + 1 values)."""
    return np.searchsorted(seg, np.arange(n + 1), side="left")


def fuse_select(
    flat: FlatCandidates, r: RetrievalConfig, top_k: int, normed: dict[tuple[str, str], np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fuse, drop below ``min_relevance``, de-duplicate (first of each group stays) and keep each query's
    first ``top_k``: (element indices in rank order, their scores, segment bounds into those two arrays).
    ``normed``: per (source, normalisation) the weighted method's normalised scores, laid out like ``flat``."""
    f = r.fusion
    n = len(flat.seg)
    acc = np.zeros(n)
    if f.method == "rrf":
        included = np.zeros(n, dtype=bool)
        for s in flat.sources:
            w = float(f.weights.get(s, 0.0))
            if w == 0.0:
                continue
            acc = acc + np.where(flat.has[s], w / (f.rrf_k + flat.ranks[s]), 0.0)
            included |= flat.has[s]
        # each query's best possible score over the sources it has (few distinct combinations)
        tops = {p: max_score("rrf", list(p), f.weights, f.rrf_k) for p in set(flat.present)}
        per_query = np.array([tops[p] for p in flat.present]) if flat.present else np.zeros(0)
        acc = acc / per_query[flat.seg]
        order = np.lexsort((-acc, flat.seg))  # stable: ties keep id order within a query
        order = order[included[order]]
        scores = acc[order]
        qs = flat.seg[order]
    else:
        contributed = False
        for s in flat.sources:
            w = float(f.weights.get(s, 0.0))
            if w == 0.0:
                continue
            assert normed is not None
            acc = acc + w * normed[(s, f.normalization)]
            contributed = True
        if not contributed:
            empty = np.zeros(0, dtype=np.int64)
            return empty, np.zeros(0), np.zeros(flat.n_queries + 1, dtype=np.int64)
        order = np.lexsort((-acc, flat.seg))
        # a query none of whose own sources carries weight has no result (as in the per-query path)
        weighted = np.array([any(float(f.weights.get(s, 0.0)) != 0.0 for s in p) for p in flat.present], dtype=bool)
        order = order[weighted[flat.seg[order]]]
        # min-max per query over its candidates (every segment here is non-empty: empty ones have no elements)
        bounds = _segment_bounds(flat.seg, flat.n_queries)
        nonempty = np.nonzero(np.diff(bounds))[0]
        lo = np.zeros(flat.n_queries)
        hi = np.zeros(flat.n_queries)
        if len(nonempty):
            lo[nonempty] = np.minimum.reduceat(acc, bounds[nonempty])
            hi[nonempty] = np.maximum.reduceat(acc, bounds[nonempty])
        span = hi - lo
        flat_q = span <= 1e-12
        sorted_acc = acc[order]
        qs = flat.seg[order]
        with np.errstate(invalid="ignore", divide="ignore"):
            scaled = (sorted_acc - lo[qs]) / span[qs]
        scores = np.where(flat_q[qs], 1.0, scaled)
    if r.min_relevance > 0:  # scores fall within each query: keep the prefix at or above the threshold
        keep = scores >= r.min_relevance
        order, scores, qs = order[keep], scores[keep], qs[keep]
    if r.dedup:  # groups are unique across queries, so one pass keeps the first of each within its query
        keep, _ = dedup_first_of_group(flat.group[order], len(order))
        order, scores, qs = order[keep], scores[keep], qs[keep]
    counts = np.bincount(qs, minlength=flat.n_queries)
    starts = np.cumsum(counts) - counts
    keep = (np.arange(len(order)) - starts[qs]) < top_k
    order, scores, qs = order[keep], scores[keep], qs[keep]
    return order, scores, _segment_bounds(qs, flat.n_queries)
