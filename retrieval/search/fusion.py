"""Rank fusion: small pure functions behind one ``fuse`` and a registry.

A run is ``{item_id: score}`` for one query and one source (higher is better).
Ranks inside a run are by (-score, id), so ties never depend on dict order, and
the fused list is ordered the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ragrig.configs.errors import InputError

Run = Mapping[str, float]
Fused = list[tuple[str, float]]


def ranked(run: Run) -> list[str]:
    """Item ids by (-score, id)."""
    return [i for i, _ in sorted(run.items(), key=lambda kv: (-kv[1], kv[0]))]


def order(scores: Mapping[str, float]) -> Fused:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def rrf(runs: Mapping[str, Run], *, k: float = 60.0, weights: Mapping[str, float] | None = None) -> Fused:
    """Reciprocal Rank Fusion: score(d) = sum over sources of w_s / (k + rank_s(d)), ranks from 1."""
    ranks = {source: {item: r for r, item in enumerate(ranked(run), start=1)} for source, run in runs.items()}
    return rrf_from_ranks(ranks, k=k, weights=weights)


def rrf_from_ranks(
    ranks: Mapping[str, Mapping[str, int]], *, k: float = 60.0, weights: Mapping[str, float] | None = None
) -> Fused:
    """RRF from ranks already computed per source (callers that memoise ranks skip the sorting)."""
    if k <= 0:
        raise InputError(f"rrf k must be > 0 (got {k})")
    out: dict[str, float] = {}
    for source, by_item in ranks.items():
        w = 1.0 if weights is None else float(weights.get(source, 0.0))
        if w == 0.0:
            continue
        for item, rank in by_item.items():
            out[item] = out.get(item, 0.0) + w / (k + rank)
    return order(out)


def minmax(run: Run) -> dict[str, float]:
    """Scale to [0, 1]; a run whose scores are all equal maps to 1.0 (no zero-range division)."""
    if not run:
        return {}
    lo, hi = min(run.values()), max(run.values())
    if hi - lo <= 1e-12:
        return {i: 1.0 for i in run}
    return {i: (s - lo) / (hi - lo) for i, s in run.items()}


def zscore(run: Run) -> dict[str, float]:
    """(s - mean) / std (population); a zero-spread run maps to 0.0."""
    if not run:
        return {}
    vals = list(run.values())
    mean = sum(vals) / len(vals)
    var = sum((v - mean) ** 2 for v in vals) / len(vals)
    std = math.sqrt(var)
    if std <= 1e-12:
        return {i: 0.0 for i in run}
    return {i: (s - mean) / std for i, s in run.items()}


NORMALIZERS: dict[str, Callable[[Run], dict[str, float]]] = {"minmax": minmax, "zscore": zscore}


def weighted(
    runs: Mapping[str, Run], *, weights: Mapping[str, float] | None = None, normalization: str = "zscore"
) -> Fused:
    """Convex score fusion: sum of w_s * norm_s(d). An item a source did not return gets that source's
    lowest normalised score (it ranked below everything the source returned)."""
    if normalization not in NORMALIZERS:
        raise InputError(f"unknown normalization {normalization!r}; supported: {sorted(NORMALIZERS)}")
    norm = NORMALIZERS[normalization]
    normed = {s: norm(r) for s, r in runs.items()}
    items = {i for r in runs.values() for i in r}
    out: dict[str, float] = {}
    for source, scores in normed.items():
        w = 1.0 if weights is None else float(weights.get(source, 0.0))
        if w == 0.0 or not scores:
            continue
        floor = min(scores.values())
        for item in items:
            out[item] = out.get(item, 0.0) + w * scores.get(item, floor)
    return order(out)


FUSION: dict[str, Callable[..., Fused]] = {"rrf": rrf, "weighted": weighted}


def fuse(runs: Mapping[str, Run], method: str = "rrf", **params: object) -> Fused:
    """Fuse per-source runs with a registered method (``rrf`` or ``weighted``)."""
    try:
        fn = FUSION[method]
    except KeyError:
        raise InputError(f"unknown fusion method {method!r}; supported: {', '.join(sorted(FUSION))}") from None
    return fn(runs, **params)


def max_score(method: str, sources: list[str], weights: Mapping[str, float], rrf_k: float) -> float:
    """The best fused score an item could get from these sources (to express scores as 0..1 relevance)."""
    ws = [float(weights.get(s, 0.0)) for s in sources]
    if method == "rrf":
        return sum(w / (rrf_k + 1) for w in ws) or 1.0
    return sum(ws) or 1.0
