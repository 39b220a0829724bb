"""Rank fusion over a batch of queries in one array pass: small pure functions behind one ``fuse`` and a
registry (an unknown name lists the supported ones). A single query is a batch of one.

Methods (``w_s``: the source's weight; a source with weight 0 is left out):
- ``rrf``: score = sum_s w_s / (k + rank_s), ranks from 1 by (-score, chunk id) within each source.
- ``weighted``: score = sum_s w_s * norm_s, each source's scores normalised over its own candidates for that
  query (``zscore`` or ``minmax``); a candidate a source did not return gets that source's lowest normalised
  score (it ranked below everything the source returned).
Each query's candidates are ordered by (-score, chunk id), then the scores are expressed as 0..1 relevance:
RRF over the best score the query's sources could give (1 = ranked first everywhere), weighted by min-max
over the query's candidates.

Normalisation sums scores left to right in the order the source returned them (as Python's ``sum`` does)
and squares with ``pow``, so a score depends only on its query's run, never on the batch around it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.configs.models import FusionConfig
from ragrig.retrieval.search.candidates import CandidateBatch


def _sum(x: np.ndarray) -> float:
    return float(np.cumsum(x)[-1])  # sequential; numpy's sum is pairwise and rounds differently


def zscore(scores: np.ndarray) -> np.ndarray:
    """(s - mean) / std (population); zero spread maps to 0.0."""
    n = len(scores)
    d = scores - _sum(scores) / n
    std = math.sqrt(_sum(np.float_power(d, 2.0)) / n)
    return np.zeros(n) if std <= 1e-12 else d / std


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; all-equal scores map to 1.0 (no zero-range division)."""
    lo, hi = float(scores.min()), float(scores.max())
    return np.ones(len(scores)) if hi - lo <= 1e-12 else (scores - lo) / (hi - lo)


NORMALIZERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"minmax": minmax, "zscore": zscore}


def max_score(method: str, sources: tuple[str, ...] | list[str], weights: Mapping[str, float], rrf_k: float) -> float:
    """The best fused score an item could get from these sources (to express scores as 0..1 relevance)."""
    ws = [float(weights.get(s, 0.0)) for s in sources]
    if method == "rrf":
        return sum(w / (rrf_k + 1) for w in ws) or 1.0
    return sum(ws) or 1.0


def rrf(batch: CandidateBatch, f: FusionConfig) -> np.ndarray:
    if f.rrf_k <= 0:
        raise InputError(f"rrf k must be > 0 (got {f.rrf_k})")
    acc = np.zeros(len(batch.rows))
    for s in batch.sources:
        w = float(f.weights.get(s, 0.0))
        if w:
            rk = batch.rank[s]
            acc = acc + np.where(rk > 0, w / (f.rrf_k + rk), 0.0)
    return acc


def weighted(batch: CandidateBatch, f: FusionConfig) -> np.ndarray:
    if f.normalization not in NORMALIZERS:
        raise InputError(f"unknown normalization {f.normalization!r}; supported: {sorted(NORMALIZERS)}")
    acc = np.zeros(len(batch.rows))
    for s in batch.sources:
        w = float(f.weights.get(s, 0.0))
        if w:
            acc = acc + w * batch.normalised(s, f.normalization, NORMALIZERS[f.normalization])
    return acc


FUSION: dict[str, Callable[[CandidateBatch, FusionConfig], np.ndarray]] = {"rrf": rrf, "weighted": weighted}


@dataclass
class Fused:
    """Each query's candidates in fused order: element indices into the batch, their 0..1 scores, and the
    segment bounds (query q's candidates are ``order[bounds[q]:bounds[q + 1]]``)."""

    order: np.ndarray
    scores: np.ndarray
    bounds: np.ndarray


def fuse(batch: CandidateBatch, f: FusionConfig) -> Fused:
    method = FUSION.get(f.method)
    if method is None:
        raise InputError(f"unknown fusion method {f.method!r}; supported: {', '.join(sorted(FUSION))}")
    acc = method(batch, f)
    # stable: within a query, candidates are in chunk-id order, so equal scores keep it (the tie-break)
    order = np.lexsort((-acc, batch.seg))
    bounds = batch.bounds()
    raw, seg = acc[order], batch.seg[order]
    if f.method == "rrf":
        top = np.array([max_score("rrf", p, f.weights, f.rrf_k) for p in batch.present])
        return Fused(order, raw / top[seg], bounds)
    # min-max per query; in fused order a query's first score is its highest and its last the lowest
    full = np.nonzero(bounds[1:] > bounds[:-1])[0]
    hi, lo = np.zeros(len(bounds) - 1), np.zeros(len(bounds) - 1)
    hi[full], lo[full] = raw[bounds[full]], raw[bounds[full + 1] - 1]
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(span[seg] <= 1e-12, 1.0, (raw - lo[seg]) / span[seg])
    return Fused(order, scores, bounds)


def best_rows(batch: CandidateBatch, fused: Fused) -> list[int | None]:
    """Each query's best fused candidate row (None: it has no candidate)."""
    return [int(batch.rows[fused.order[lo]]) if hi > lo else None
            for lo, hi in zip(fused.bounds[:-1].tolist(), fused.bounds[1:].tolist())]
