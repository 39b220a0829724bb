"""benchmarks/granularity_scifact.py helpers on hand-computed cases (the figures in docs/results.md rest on them;
the metrics themselves are eval.metrics, tested in tests/eval)."""

from __future__ import annotations


import numpy as np
import pytest



@pytest.fixture(scope="module")
def gran(load_benchmark):
    return load_benchmark("granularity_scifact")


def test_sentences_split_at_ends_followed_by_a_capital_digit_or_bracket(gran):
    text = "IL-6 rose 2.5 fold (p < 0.05). Mice lived longer! 30% did not. (See Fig. 2) e.g. this stays. Why? ok"
    assert gran.split_sentences(text) == [
        "IL-6 rose 2.5 fold (p < 0.05).", "Mice lived longer!", "30% did not.", "(See Fig.", "2) e.g. this stays.",
        "Why? ok",
    ]
    assert gran.split_sentences("   ") == ["   "]  # nothing to split: the text itself, never an empty list


def test_ranked_rows_drop_later_pieces_of_a_section_and_non_candidates(gran):
    scores = np.array([0.1, 0.9, 0.5, 0.8, 0.5, -np.inf])
    sec = ("section", "b", ("T",), 1)
    keys = [(("text", "a"),), (("text", "b1"), sec), (("text", "c"),), (("text", "b2"), sec), (("text", "d"),),
            (("text", "e"),)]
    prone = np.array([False, True, False, True, False, False])
    # row 3 is the second piece of row 1's section; row 5 is no candidate; ties (2, 4) keep row order
    assert gran.ranked_rows(scores, keys, prone, 10).tolist() == [1, 2, 4, 0]
    assert gran.ranked_rows(scores, keys, prone, 2).tolist() == [1, 2]


def test_candidates_only_keeps_the_n_best(gran):
    got = gran.candidates_only(np.array([0.2, 0.7, 0.1, 0.9]), 2)
    assert got.tolist() == [-np.inf, 0.7, -np.inf, 0.9]


def test_top_run_is_the_n_best_rows(gran):
    assert gran.top_run(np.array([0.2, 0.7, 0.1, 0.9]), 2) == {3: 0.9, 1: 0.7}
