"""Section-level IR metrics on hand-made rankings, with every expected value worked out by hand."""

from __future__ import annotations

import math

import pytest
from ragrig.eval.metrics import METRICS, Ranked, mean_metrics, query_metrics, touched
from ragrig.eval.relevance import Target

KS = [1, 3, 5]
L3 = math.log2(3)  # discount of rank 2; rank 1 -> log2(2) = 1, rank 3 -> log2(4) = 2


def doc(d: str, start: int = 0, end: int = 100) -> Ranked:
    return Ranked(d, start, end)


def target(d: str, grade: int = 1, start: int = 0, end: int = 100, key: str | None = None) -> Target:
    return Target(key or f"{d}#{start}", d, start, end, grade, "")


def check(got: dict[str, float], expected: dict[str, float]) -> None:
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k


def test_keys():
    m = query_metrics([doc("d1")], [target("d1")], [1, 10])
    assert set(m) == {f"{name}@{k}" for name in METRICS for k in (1, 10)}


def test_binary_two_relevant_at_ranks_1_and_3():
    ranking = [doc(d) for d in ("d1", "d2", "d3", "d4", "d5")]
    m = query_metrics(ranking, [target("d1"), target("d3")], KS)
    check(m, {
        # k=1: [R]
        "precision@1": 1.0, "recall@1": 0.5, "hit_rate@1": 1.0, "mrr@1": 1.0,
        "map@1": 0.5,  # (1/1) / 2 relevant
        "ndcg@1": 1.0,  # 1/1 over ideal 1/1
        # k=3: [R, N, R]
        "precision@3": 2 / 3, "recall@3": 1.0, "hit_rate@3": 1.0, "mrr@3": 1.0,
        "map@3": (1 / 1 + 2 / 3) / 2,  # = 5/6
        "ndcg@3": (1 + 1 / 2) / (1 + 1 / L3),  # 1.5 / 1.6309 = 0.91972
        # k=5: [R, N, R, N, N]
        "precision@5": 2 / 5, "recall@5": 1.0, "map@5": 5 / 6, "ndcg@5": 1.5 / (1 + 1 / L3),
    })
    assert m["ndcg@3"] == pytest.approx(0.9197207891481876)


def test_first_relevant_at_rank_3_and_a_short_ranking():
    m = query_metrics([doc("d2"), doc("d4"), doc("d1")], [target("d1")], KS)
    check(m, {
        "precision@1": 0.0, "recall@1": 0.0, "hit_rate@1": 0.0, "mrr@1": 0.0, "map@1": 0.0, "ndcg@1": 0.0,
        "precision@3": 1 / 3, "recall@3": 1.0, "hit_rate@3": 1.0, "mrr@3": 1 / 3, "map@3": 1 / 3,
        "ndcg@3": (1 / 2) / 1,  # gain 1 at rank 3 (discount log2(4) = 2), ideal 1
        # only 3 items retrieved: precision@5 still divides by 5 (as trec_eval does)
        "precision@5": 1 / 5, "recall@5": 1.0, "mrr@5": 1 / 3, "map@5": 1 / 3, "ndcg@5": 0.5,
    })


def test_nothing_relevant_or_nothing_retrieved():
    for ranking in ([doc("x"), doc("y")], []):
        m = query_metrics(ranking, [target("d1")], KS)
        assert all(v == 0.0 for v in m.values())
    with pytest.raises(ValueError):
        query_metrics([doc("d1")], [], KS)


def test_graded_relevance():
    # d1 is the primary answer (grade 2), d2 supporting (grade 1); ranking: d2, d3, d1
    m = query_metrics([doc("d2"), doc("d3"), doc("d1")], [target("d1", 2), target("d2", 1)], KS)
    check(m, {
        "precision@1": 1.0, "recall@1": 0.5, "mrr@1": 1.0, "map@1": 0.5,
        "ndcg@1": 1 / 2,  # gain 1 at rank 1 over the ideal gain 2 at rank 1
        "precision@3": 2 / 3, "recall@3": 1.0, "map@3": (1 / 1 + 2 / 3) / 2,
        "ndcg@3": (1 + 2 / 2) / (2 + 1 / L3),  # 2 / 2.6309 = 0.76019
        "ndcg@5": 2 / (2 + 1 / L3),
    })
    assert m["ndcg@3"] == pytest.approx(0.7601875418822904)
    # the ideal order scores 1 at every k
    best = query_metrics([doc("d1"), doc("d2")], [target("d1", 2), target("d2", 1)], KS)
    assert [best[f"ndcg@{k}"] for k in KS] == [1.0, 1.0, 1.0]


def test_big_section_split_into_chunks_earns_its_gain_once():
    big = [target("d1", 1, 0, 300)]
    pieces = [doc("d1", 0, 100), doc("d1", 100, 200), doc("d1", 200, 300)]
    m = query_metrics(pieces, big, KS)
    # every piece is relevant (precision 1), but the gain is earned once: dcg 1 = idcg 1 (not 1 + .63 + .5)
    check(m, {"precision@3": 1.0, "recall@3": 1.0, "map@3": 1.0, "ndcg@3": 1.0, "ndcg@5": 1.0, "mrr@3": 1.0})
    m = query_metrics([doc("d2", 0, 10)] + pieces[:2], big, KS)
    check(m, {
        "precision@3": 2 / 3, "recall@3": 1.0, "mrr@3": 1 / 2,
        "map@3": (1 * 1 / 2) / 1,  # the section is first covered at rank 2, precision there 1/2
        "ndcg@3": 1 / L3,  # gain 1 at rank 2
    })


def test_big_graded_section_and_a_second_target():
    targets = [target("d1", 2, 0, 300), target("d2", 1, 0, 50)]
    m = query_metrics([doc("d1", 0, 100), doc("d1", 100, 200), doc("d2", 0, 50)], targets, KS)
    # new gains per rank: 2, 0, 1 -> dcg 2 + 0 + 1/2; ideal 2, 1 -> 2 + 1/log2(3)
    check(m, {
        "precision@3": 1.0, "recall@3": 1.0,
        "map@3": (1 * 1 / 1 + 1 * 3 / 3) / 2,  # new sections at ranks 1 and 3, precision 1 and 3/3
        "ndcg@3": 2.5 / (2 + 1 / L3),
        "recall@1": 0.5, "ndcg@1": 1.0,
    })
    assert m["ndcg@3"] <= 1.0


def test_chunk_touching_two_targets():
    targets = [target("d1", 2, 0, 50), target("d1", 1, 50, 100)]
    wide = doc("d1", 40, 60)
    assert touched(wide, targets) == [0, 1]
    m = query_metrics([wide, doc("d2", 0, 10)], targets, KS)
    # rank 1 covers both sections: gain 2 + 1 = 3 at rank 1 against an ideal of 2 (k=1) or 2 + 1/log2(3) (k=3);
    # nDCG is capped at 1 (the best any ranking can do), everything else counts both sections as found
    check(m, {
        "precision@1": 1.0, "recall@1": 1.0, "map@1": (2 * 1 / 1) / 2, "ndcg@1": 1.0,
        "precision@3": 1 / 3, "recall@3": 1.0, "map@3": 1.0, "ndcg@3": 1.0, "ndcg@5": 1.0,
    })


def test_chunk_touching_two_of_three_targets():
    targets = [target("d1", 1, 0, 50), target("d1", 1, 50, 100), target("d2", 2)]
    m = query_metrics([doc("d1", 40, 60), doc("d3"), doc("d2")], targets, KS)
    # new gains: 2 (two grade-1 sections), 0, 2; ideal: 2, 1, 1
    check(m, {
        "recall@1": 2 / 3, "map@1": (2 * 1 / 1) / 3, "ndcg@1": 2 / 2,
        "recall@3": 1.0, "precision@3": 2 / 3,
        "map@3": (2 * 1 / 1 + 1 * 2 / 3) / 3,  # = 8/9
        "ndcg@3": (2 + 2 / 2) / (2 + 1 / L3 + 1 / 2),  # 3 / 3.1309 = 0.95820
    })


def test_spans_that_only_meet_do_not_touch():
    t = [target("d1", 1, 50, 100)]
    assert touched(doc("d1", 0, 50), t) == [] and touched(doc("d1", 100, 120), t) == []
    assert touched(doc("d1", 0, 51), t) == [0] and touched(doc("d1", 99, 120), t) == [0]
    assert touched(doc("d2", 50, 100), t) == []


def test_mean_metrics():
    rows = [{"ndcg@10": 1.0, "recall@10": 0.0}, {"ndcg@10": 0.5, "recall@10": 0.25}, {"ndcg@10": 0.0, "recall@10": 0.5}]
    assert mean_metrics(rows) == {"ndcg@10": 0.5, "recall@10": 0.25}
    assert mean_metrics([]) == {}
