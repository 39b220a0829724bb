"""Fold assignment by hand: round-robin within strata (in name order), the deal continuing across strata, the
seed only permuting within a stratum; the honesty check's split; and the bad-input lines."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.tune.folds import assign_folds, check_folds, split_holdout, stratum


def test_stratum_is_the_first_tag():
    assert stratum(["paraphrase", "single-hop"]) == "paraphrase"
    assert stratum([]) == "untagged"


def test_unshuffled_deal_by_hand():
    # strata in name order: a (cases 1, 3, 4, 6), then b (cases 0, 2, 5) continuing the deal where a stopped
    strata = ["b", "a", "b", "a", "a", "b", "a"]
    folds = assign_folds(strata, 3, seed=None)
    # a: 1->0, 3->1, 4->2, 6->0; b (dealt from 4): 0->1, 2->2, 5->0
    assert folds.tolist() == [1, 0, 2, 1, 2, 0, 0]
    assert np.bincount(folds).tolist() == [3, 2, 2]


def test_stratification_spreads_each_tag_evenly():
    strata = ["x"] * 6 + ["y"] * 4
    folds = assign_folds(strata, 2, seed=7)
    x, y = folds[:6], folds[6:]
    assert np.bincount(x).tolist() == [3, 3] and np.bincount(y).tolist() == [2, 2]
    # the same seed gives the same folds; the seed permutes only within strata
    assert assign_folds(strata, 2, seed=7).tolist() == folds.tolist()
    assert any(assign_folds(strata, 2, seed=s).tolist() != folds.tolist() for s in range(1, 6))


def test_unstratified_deals_all_cases_as_one_group():
    folds = assign_folds(["a", "a", "a", "b"], 2, seed=None, stratify=False)
    assert folds.tolist() == [0, 1, 0, 1]


def test_holdout_split_by_hand():
    # a: 4 cases -> 2 held; b: 3 cases -> round(1.5) = 2 held; c: 1 case -> none (a one-case stratum stays in tuning)
    strata = ["a", "a", "a", "a", "b", "b", "b", "c"]
    held = split_holdout(strata, 0.5, seed=None)
    assert held.tolist() == [True, True, False, False, True, True, False, False]


@pytest.mark.parametrize("k, strata, message", [
    (1, ["a", "a"], "folds=1: cross-validation needs at least 2 folds"),
    (5, ["a"] * 4, "folds=5 is larger than the test set's 4 cases; use --folds 4 or fewer"),
    (3, ["a"] * 5 + ["broad"] * 2, "tag 'broad' has 2 case(s), fewer than folds=3; use --folds 2 or fewer"),
])
def test_bad_folds_name_the_file_value_and_fix(k, strata, message):
    with pytest.raises(InputError) as err:
        check_folds(k, strata, "ts.yaml")
    assert str(err.value) == f"ts.yaml: {message}" + (", or --no-stratify" if "tag" in message else "")
    assert "\n" not in str(err.value)


def test_one_case_is_never_told_to_use_one_fold():
    """One case left (a small test set, or a large --holdout-fraction): the fix offered is one the options accept
    (folds has a minimum of 2), not "use --folds 1 or fewer"."""
    with pytest.raises(InputError, match=r"^ts.yaml: folds=2 is larger than the test set's 1 case; cross-validation "
                                         r"needs at least 2 cases \(give more cases\)$"):
        check_folds(2, ["a"], "ts.yaml")
    with pytest.raises(InputError, match=r"give more cases, or a smaller --holdout-fraction\)$") as err:
        check_folds(2, ["a"], "ts.yaml (the tuning part)", holdout=True)
    assert "--folds 1" not in str(err.value)


def test_small_tag_is_fine_without_stratification():
    check_folds(3, ["a"] * 5 + ["broad"] * 2, "ts.yaml", stratify=False)


def test_bad_holdout_fraction():
    with pytest.raises(InputError, match=r"--holdout-fraction=1.5: needs a value between 0 and 1"):
        split_holdout(["a", "a"], 1.5)
