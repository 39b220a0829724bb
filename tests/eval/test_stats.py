"""Paired significance tests on hand-computed cases (and scipy where it applies)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ragrig.eval.stats import paired_t_p, permutation_p


@pytest.mark.parametrize(
    "diffs, expected",
    [
        ([1, 2, 3], 2 / 8),  # sign sums 6,4,2,0,0,-2,-4,-6: |sum| >= 6 in 2 of 8
        ([0.5, 0.5, 0.5, 0.5], 2 / 16),  # only all-plus and all-minus reach |mean| 0.5
        ([1, -1], 1.0),  # observed mean 0: every sign vector is as extreme
        ([0, 0, 0], 1.0),  # no difference at all
        ([0, 1, 2, 3, 0], 2 / 8),  # zeros do not change the test
    ],
)
def test_exact_permutation_p(diffs, expected):
    assert permutation_p(np.array(diffs, dtype=float)) == pytest.approx(expected)


def test_sampled_permutation_p_is_seeded_and_close_to_exact_logic():
    rng = np.random.default_rng(1)
    d = rng.normal(0.05, 0.2, size=40)
    p1, p2 = permutation_p(d, 5000, seed=3), permutation_p(d, 5000, seed=3)
    assert p1 == p2  # fixed seed -> same p
    assert 0 < p1 <= 1
    # 30 equal positive differences: no random sign vector (short of all-plus/all-minus, odds 2^-29) is
    # as extreme, so p = (0 + 1) / (2000 + 1)
    assert permutation_p(np.full(30, 0.1), 2000) == pytest.approx(1 / 2001)


def test_paired_t_matches_scipy_and_hand_value():
    from scipy import stats

    a, b = np.zeros(3), np.array([1.0, 2.0, 3.0])
    # d = 1,2,3: mean 2, sd 1, t = 2 / (1/sqrt 3) = 3.4641, df 2
    t = 2 / (1 / math.sqrt(3))
    assert paired_t_p(a, b) == pytest.approx(2 * stats.t.sf(t, 2))
    rng = np.random.default_rng(0)
    x, y = rng.random(50), rng.random(50)
    assert paired_t_p(x, y) == pytest.approx(stats.ttest_rel(y, x).pvalue)
    assert paired_t_p(x, x) == 1.0
