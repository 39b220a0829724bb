"""benchmarks/granularity_scifact.py helpers on hand-computed cases (the figures in docs/results.md rest on them)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gran():
    spec = importlib.util.spec_from_file_location("bench_granularity", ROOT / "benchmarks" / "granularity_scifact.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def test_sentences_split_at_ends_followed_by_a_capital_digit_or_bracket(gran):
    text = "IL-6 rose 2.5 fold (p < 0.05). Mice lived longer! 30% did not. (See Fig. 2) e.g. this stays. Why? ok"
    assert gran.split_sentences(text) == [
        "IL-6 rose 2.5 fold (p < 0.05).", "Mice lived longer!", "30% did not.", "(See Fig.", "2) e.g. this stays.",
        "Why? ok",
    ]
    assert gran.split_sentences("   ") == ["   "]  # nothing to split: the text itself, never an empty list


def test_doc_ranking_keeps_each_documents_best_chunk_in_order(gran):
    scores = np.array([0.1, 0.9, 0.5, 0.8, 0.5])
    assert gran.doc_ranking(scores, ["a", "b", "c", "b", "d"]) == ["b", "c", "d", "a"]
    assert gran.doc_ranking(scores, ["a", "b", "c", "b", "d"], n=2) == ["b", "c"]


def test_ndcg_and_recall_by_hand(gran):
    grades = {"x": 1, "y": 1}
    # hits at ranks 2 and 3: (1/log2 3 + 1/log2 4) / (1 + 1/log2 3)
    want = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3))
    assert gran.ndcg_at(["z", "x", "y"], grades, 10) == pytest.approx(want)
    assert gran.ndcg_at(["z", "x", "y"], grades, 1) == 0.0
    assert gran.recall_at(["z", "x"], grades, 2) == 0.5
    assert gran.recall_at([], {}, 10) == 0.0


def test_top_run_is_the_n_best_rows(gran):
    assert gran.top_run(np.array([0.2, 0.7, 0.1, 0.9]), 2) == {3: 0.9, 1: 0.7}
