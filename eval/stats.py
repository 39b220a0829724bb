"""Paired significance tests over per-query differences (two runs, the same queries).

- ``permutation_p``: a randomisation (sign-flip permutation) test on the differences, exact when there are at
  most 16 non-zero differences, else ``n_perm`` random sign vectors from a fixed seed;
- ``paired_t_p``: a paired t-test (scipy), p = 1 when every difference is zero;
- ``holm``: Holm's step-down correction of a family of p-values (the gate's checks of several metrics and tags).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

TIE = 1e-9
"""Differences this small count as ties (and as zero in the tests)."""


def permutation_p(diffs: np.ndarray, n_perm: int = 10000, seed: int = 0) -> float:
    """Two-sided sign-flip randomisation test of mean(diffs) == 0."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.abs(d) > TIE]
    if d.size == 0:
        return 1.0
    observed = abs(d.mean())
    if d.size <= 16:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d.size)))
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((-1.0, 1.0), size=(n_perm, d.size))
    # zeros dropped above change every mean by the same factor, so the test is unchanged
    means = np.abs((signs * d).mean(axis=1))
    if d.size <= 16:
        return float(np.mean(means >= observed - 1e-12))
    return float((np.sum(means >= observed - 1e-12) + 1) / (n_perm + 1))


def paired_t_p(a: np.ndarray, b: np.ndarray) -> float:
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.size < 2 or np.all(np.abs(d) <= TIE):
        return 1.0
    if np.std(d, ddof=1) <= TIE:
        return 0.0  # a constant non-zero difference: as significant as it gets
    from scipy import stats

    return float(stats.ttest_rel(b, a).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given: the i-th smallest of m is multiplied by m - i + 1,
    then made non-decreasing along that order and capped at 1. Rejecting every adjusted p < alpha keeps the
    chance of any false rejection in the family at most alpha."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        out[i] = running
    return out
