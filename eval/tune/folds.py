"""Cases into folds: k-fold by case, stratified by each case's first tag (the test sets write its kind first:
single-hop, multi-hop, comparison, paraphrase, exact-term, ...), from a fixed seed; and the honesty check's split
of the cases into a tuning part and a held-out part, stratified the same way.

Assignment: the strata in name order; within each, the cases shuffled by the seed (``seed=None``: as given),
then dealt round-robin to the folds, the deal continuing where the previous stratum stopped. So every fold gets
each stratum's cases to within one, and the fold sizes differ by at most one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ragrig.configs.errors import InputError

UNTAGGED = "untagged"


def stratum(tags: Sequence[str]) -> str:
    return tags[0] if tags else UNTAGGED


def check_folds(k: int, strata: Sequence[str], where: str, stratify: bool = True, holdout: bool = False) -> None:
    """k against the cases (``holdout``: the tuning part left by --holdout-fraction): one line naming the test set,
    the value and what to change (a change that is itself allowed)."""
    n = len(strata)
    if k < 2:
        raise InputError(f"{where}: folds={k}: cross-validation needs at least 2 folds")
    if k > n:
        fix = f"use --folds {n} or fewer" if n >= 2 else "cross-validation needs at least 2 cases (give more cases" + (
            ", or a smaller --holdout-fraction)" if holdout else ")")
        raise InputError(f"{where}: folds={k} is larger than the test set's {n} case{'s' if n != 1 else ''}; {fix}")
    if stratify:
        counts: dict[str, int] = {}
        for s in strata:
            counts[s] = counts.get(s, 0) + 1
        small = sorted((c, s) for s, c in counts.items() if c < k)
        if small:
            c, s = small[0]
            if c < 2:  # no k >= 2 stratifies a one-case tag: only dropping the stratification (or cases) fixes it
                raise InputError(f"{where}: tag '{s}' (a case's first tag) has only {c} case, and stratified folds "
                                 "need at least 2 per tag; use --no-stratify, or give that tag more cases")
            raise InputError(f"{where}: tag '{s}' has {c} case(s), fewer than folds={k}; use --folds {c} or fewer, "
                             "or --no-stratify")


def assign_folds(strata: Sequence[str], k: int, seed: int | None = 0, stratify: bool = True) -> np.ndarray:
    """The fold (0..k-1) of each case, in the order given."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s if stratify else "", []).append(i)
    rng = None if seed is None else np.random.default_rng(seed)
    out = np.empty(len(strata), dtype=np.int64)
    dealt = 0
    for name in sorted(groups):
        members = groups[name]
        if rng is not None:
            members = [members[j] for j in rng.permutation(len(members))]
        for j, i in enumerate(members):
            out[i] = (dealt + j) % k
        dealt += len(members)
    return out


def split_holdout(strata: Sequence[str], fraction: float, seed: int | None = 0) -> np.ndarray:
    """True for the cases held out of tuning: within each stratum (shuffled by ``seed``), the first
    round(fraction * size) cases, at least one and at most size - 1 where the stratum has two or more."""
    if not 0 < fraction < 1:
        raise InputError(f"--holdout-fraction={fraction}: needs a value between 0 and 1 (e.g. 0.5)")
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    rng = None if seed is None else np.random.default_rng(seed)
    held = np.zeros(len(strata), dtype=bool)
    for name in sorted(groups):
        members = groups[name]
        if rng is not None:
            members = [members[j] for j in rng.permutation(len(members))]
        n = len(members)
        take = min(max(round(fraction * n), 1), n - 1) if n >= 2 else 0
        held[members[:take]] = True
    return held
