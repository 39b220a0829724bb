"""Multi-part questions: splitting into sentences and clauses (hand-made questions), and RRF merging
(hand-computed)."""

from __future__ import annotations

import pytest
from ragrig.retrieval.subqueries import merge, split_question


@pytest.mark.parametrize("question, parts", [
    ("Our events are several classes told apart by a kind string. How do I dispatch on that, and can I change "
     "the error people see?",
     ["Our events are several classes told apart by a kind string.", "How do I dispatch on that",
      "can I change the error people see?"]),
    ("Old code uses @validator with each_item=True plus a @root_validator. What do I rewrite them as in v2?",
     ["Old code uses @validator with each_item=True plus a @root_validator.", "What do I rewrite them as in v2?"]),
    ("How far can an operative move when charging; what happens to its order afterwards?",
     ["How far can an operative move when charging", "what happens to its order afterwards?"]),
])
def test_multi_part_questions_split_into_parts(question, parts):
    assert split_question(question) == parts


@pytest.mark.parametrize("question", [
    "How big should the table be?",
    "What is Dash and Charge?",  # one question: "Charge" is no clause of its own
    "Hi. How big should the table be in inches?",  # a short sentence joins its neighbour: one part left
    "Can I heal, and how?",
    "",
])
def test_single_questions_are_not_split(question):
    assert split_question(question) == []


def test_merge_is_reciprocal_rank_fusion_scaled_to_one():
    got = merge([[1, 2, 3], [3, 4]])
    # 3: 1/63 + 1/61; 1: 1/61; 2: 1/62; 4: 1/62 (tie with 2: row order); best possible 2/61
    best = 2 / 61
    assert got == [(3, pytest.approx((1 / 63 + 1 / 61) / best)), (1, pytest.approx((1 / 61) / best)),
                   (2, pytest.approx((1 / 62) / best)), (4, pytest.approx((1 / 62) / best))]
    # ties break by the given order (chunk-id order), not by row
    assert [r for r, _ in merge([[7], [9]], order={7: 5, 9: 1})] == [9, 7]
    assert merge([]) == []
