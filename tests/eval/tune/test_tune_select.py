"""Nested selection, the estimate and the rule that keeps the default, on score matrices small enough to work
out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.eval.tune.select import bootstrap_ci, decide, nested, per_tag, pick


def test_pick_prefers_default_on_a_tie_then_the_first():
    s = np.array([[0.5, 0.5], [0.6, 0.4], [0.7, 0.3]])  # every mean 0.5
    assert pick(s, np.array([True, True])) == 0
    s = np.array([[0.1, 0.1], [0.6, 0.4], [0.7, 0.3]])  # 1 and 2 tie above the default
    assert pick(s, np.array([True, True])) == 1


def test_nested_picks_on_other_folds_and_scores_held_out():
    # 4 cases, folds [0, 0, 1, 1]; candidate 1 wins fold 0's cases, candidate 2 fold 1's
    s = np.array([[0.5, 0.5, 0.5, 0.5],
                  [1.0, 1.0, 0.0, 0.0],
                  [0.0, 0.0, 0.9, 0.9]])
    folds = np.array([0, 0, 1, 1])
    n = nested(s, folds, 2)
    # fold 0 held out: trained on cases 2-3 -> candidate 2 (0.9), scored on cases 0-1: 0.0
    # fold 1 held out: trained on cases 0-1 -> candidate 1 (1.0), scored on cases 2-3: 0.0
    assert n.picks == [2, 1]
    assert n.fold_scores == [0.0, 0.0] and n.estimate == 0.0
    assert n.fold_default == [0.5, 0.5] and n.default_estimate == 0.5
    assert n.case_scores.tolist() == [0.0, 0.0, 0.0, 0.0]
    # the in-sample best (candidate 1, mean 0.5 ties the default -> default; candidate 2 0.45) would look fine;
    # held out, choosing loses 0.5 against the default: the decision keeps the default
    d = decide(n, 0.05, winner=2)
    assert not d.significant and d.gain == -0.5 and "no held-out gain" in d.reason


def test_a_consistent_winner_is_significant():
    # candidate 1 beats the default by 0.2 on each of 20 cases: every fold picks it, gain 0.2, sign-flip p tiny
    base = np.linspace(0.2, 0.6, 20)
    s = np.vstack([base, base + 0.2])
    folds = np.arange(20) % 5
    n = nested(s, folds, 5)
    assert n.picks == [1] * 5 and n.estimate == pytest.approx(base.mean() + 0.2)
    d = decide(n, 0.05, winner=1)
    assert d.significant and d.gain == pytest.approx(0.2) and d.p < 0.001
    assert d.gain_ci[0] == pytest.approx(0.2) and d.gain_ci[1] == pytest.approx(0.2)


def test_a_small_noisy_gain_keeps_the_default():
    # candidate 1 is +0.1 on 3 cases and -0.05 on 3: mean +0.025, the 6 sign flips give p = 40/64 > 0.05
    s = np.array([[0.5] * 6, [0.6, 0.6, 0.6, 0.45, 0.45, 0.45]])
    folds = np.array([0, 1, 2, 0, 1, 2])
    n = nested(s, folds, 3)
    assert n.picks == [1, 1, 1]
    d = decide(n, 0.05, winner=1)
    assert d.gain == pytest.approx(0.025) and d.p == pytest.approx(40 / 64)
    assert not d.significant and "not significant" in d.reason


def test_default_as_winner_writes_nothing():
    s = np.array([[0.9] * 4, [0.1] * 4])
    n = nested(s, np.array([0, 1, 0, 1]), 2)
    d = decide(n, 0.05, winner=0)
    assert not d.significant and d.reason == "the default is the best candidate on all cases"


def test_bootstrap_interval_brackets_the_mean_and_is_reproducible():
    v = np.array([0.0, 1.0] * 10)
    lo, hi = bootstrap_ci(v, 2000, seed=0)
    assert lo < 0.5 < hi and (lo, hi) == bootstrap_ci(v, 2000, seed=0)
    assert bootstrap_ci(np.full(5, 0.3)) == pytest.approx((0.3, 0.3))


def test_per_tag_effect_by_hand():
    s = np.array([[0.5, 0.5, 0.5], [1.0, 0.0, 1.0]])
    n = nested(s, np.array([0, 1, 2]), 3)
    # each fold's pick, trained on the other two cases: fold 0 -> (0.0+1.0)/2=0.5 ties default -> 0; fold 1 ->
    # candidate 1 (1.0); fold 2 -> default (tie)
    assert n.picks == [0, 1, 0] and n.case_scores.tolist() == [0.5, 0.0, 0.5]
    tags = per_tag(n, [["a"], ["a", "b"], []])
    assert tags["a"] == {"n": 2.0, "tuned": 0.25, "default": 0.5, "gain": -0.25, "p": 1.0}
    assert tags["b"]["gain"] == -0.5 and tags["untagged"]["gain"] == 0.0
