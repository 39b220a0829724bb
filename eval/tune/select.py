"""Nested selection over per-case scores, the held-out estimate, its interval, and the rule that keeps the default.

Selection trains nothing, so each candidate is evaluated once over every case (``scores[c, i]``: candidate c's
metric on case i) and the folds only partition those scores. For each fold f the candidate with the best mean on
the other k-1 folds is picked (a tie keeps the default, then the earlier candidate) and scored on fold f alone.
Each case thereby gets a held-out score: that of the candidate picked without it. The estimate is the mean over
folds of the pick's held-out score (the folds differ in size by at most one, so this is within rounding of the
mean over cases); the default's score on the same folds stands beside it.

The interval is a percentile bootstrap over cases (resampling the per-case held-out scores, ``bootstrap``
times, from the seed): the cases are what was sampled from the user's questions, and with k=5 a t-interval over
fold means has 4 degrees of freedom and five coarse points. It treats the picks as fixed (the spread of the
selection itself is what the honesty check measures). The decision is a paired sign-flip permutation test of
the per-case differences (pick minus default, ``eval.stats.permutation_p``): a winner is written only when the
mean difference is positive and p < alpha; otherwise the default stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ragrig.eval.stats import TIE, permutation_p


def pick(scores: np.ndarray, cols: np.ndarray, default: int = 0) -> int:
    """The candidate with the best mean over ``cols`` (a bool mask or indices); a tie keeps ``default``, then
    the first candidate."""
    means = scores[:, cols].mean(axis=1)
    best = float(means.max())
    if means[default] >= best - TIE:
        return default
    return int(np.nonzero(means >= best - TIE)[0][0])


@dataclass
class Nested:
    picks: list[int]  # per fold: the candidate picked on the other folds
    fold_scores: list[float]  # per fold: the pick's mean on the fold
    fold_default: list[float]  # per fold: the default's mean on the fold
    case_scores: np.ndarray  # per case: the held-out score (its fold's pick)
    case_default: np.ndarray  # per case: the default's score

    @property
    def estimate(self) -> float:
        return float(np.mean(self.fold_scores))

    @property
    def default_estimate(self) -> float:
        return float(np.mean(self.fold_default))


def nested(scores: np.ndarray, folds: np.ndarray, k: int, default: int = 0) -> Nested:
    picks, fs, fd = [], [], []
    case_scores = np.empty(scores.shape[1])
    for f in range(k):
        test = folds == f
        p = pick(scores, ~test, default)
        picks.append(p)
        fs.append(float(scores[p, test].mean()))
        fd.append(float(scores[default, test].mean()))
        case_scores[test] = scores[p, test]
    return Nested(picks, fs, fd, case_scores, scores[default].astype(float).copy())


def bootstrap_ci(values: np.ndarray, n: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (resampled with replacement)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n, v.size))].mean(axis=1)
    lo, hi = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))


@dataclass
class Decision:
    gain: float  # mean per-case held-out difference, pick - default
    gain_ci: tuple[float, float]
    p: float
    significant: bool
    reason: str


def decide(n: Nested, alpha: float, winner: int, default: int = 0, boot: int = 2000, seed: int = 0) -> Decision:
    """Write the winner only when the held-out gain over the default is positive and significant (and the winner
    is not the default itself)."""
    d = n.case_scores - n.case_default
    gain = float(d.mean())
    p = permutation_p(d, seed=seed)
    ci = bootstrap_ci(d, boot, seed)
    if winner == default:
        return Decision(gain, ci, p, False, "the default is the best candidate on all cases")
    if gain <= TIE:
        return Decision(gain, ci, p, False, f"no held-out gain over the default ({gain:+.4f})")
    if p >= alpha:
        return Decision(gain, ci, p, False, f"the held-out gain {gain:+.4f} is not significant (p={p:.3g} >= {alpha})")
    return Decision(gain, ci, p, True, f"held-out gain {gain:+.4f}, p={p:.3g} < {alpha}")


def per_tag(n: Nested, tags: Sequence[Sequence[str]]) -> dict[str, dict[str, float]]:
    """The held-out effect per tag (a case counts under each of its tags): n, pick, default, gain, p."""
    out: dict[str, dict[str, float]] = {}
    names = sorted({t for ts in tags for t in ts} | ({"untagged"} if any(not ts for ts in tags) else set()))
    for name in names:
        idx = np.array([i for i, ts in enumerate(tags) if (name in ts) or (not ts and name == "untagged")])
        d = n.case_scores[idx] - n.case_default[idx]
        out[name] = {"n": float(idx.size), "tuned": float(n.case_scores[idx].mean()),
                     "default": float(n.case_default[idx].mean()), "gain": float(d.mean()),
                     "p": permutation_p(d)}
    return out
