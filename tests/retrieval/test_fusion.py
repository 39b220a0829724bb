"""Rank fusion: RRF, score normalisation, weighted fusion, deterministic tie-breaks (hand-computed floats)."""

from __future__ import annotations

import math

import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.search.fusion import fuse, max_score, minmax, ranked, rrf, weighted, zscore

# Two runs over four items. bm25 ranks a, b, c; vector ranks b, a, d.
BM25 = {"a": 3.0, "b": 2.0, "c": 1.0}
VECTOR = {"b": 0.9, "a": 0.8, "d": 0.1}
RUNS = {"bm25": BM25, "vector": VECTOR}


def as_dict(fused):
    return dict(fused)


# ---- ranked ------------------------------------------------------------------------------------------------------


def test_ranked_orders_by_score_then_id_whatever_the_dict_order():
    assert ranked({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]
    assert ranked({"a": 1.0, "c": 2.0, "b": 1.0}) == ["c", "a", "b"]
    assert ranked({}) == []


# ---- rrf ---------------------------------------------------------------------------------------------------------


def test_rrf_k60_two_sources():
    fused = rrf(RUNS, k=60)
    # a: bm25 rank 1, vector rank 2 -> 1/61 + 1/62; b: bm25 rank 2, vector rank 1 -> 1/62 + 1/61
    # c: bm25 rank 3 -> 1/63; d: vector rank 3 -> 1/63
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 63}
    assert [i for i, _ in fused] == ["a", "b", "c", "d"]  # a/b and c/d tie: id order
    for item, score in fused:
        assert score == pytest.approx(expected[item], abs=1e-15)


def test_rrf_k1_three_sources():
    runs = {
        "x": {"a": 1.0, "b": 0.5, "c": 0.2},  # a 1, b 2, c 3
        "y": {"c": 5.0, "a": 4.0},  # c 1, a 2
        "z": {"a": 10.0},  # a 1
    }
    fused = rrf(runs, k=1)
    # a: 1/2 + 1/3 + 1/2 = 4/3; c: 1/4 + 1/2 = 3/4; b: 1/3
    assert [i for i, _ in fused] == ["a", "c", "b"]
    assert as_dict(fused) == pytest.approx({"a": 4 / 3, "c": 3 / 4, "b": 1 / 3})


def test_rrf_per_source_weights():
    fused = rrf(RUNS, k=60, weights={"bm25": 2.0, "vector": 0.5})
    expected = {
        "a": 2 / 61 + 0.5 / 62,  # 0.040851...
        "b": 2 / 62 + 0.5 / 61,  # 0.040455...
        "c": 2 / 63,  # 0.031746...
        "d": 0.5 / 63,  # 0.007936...
    }
    assert [i for i, _ in fused] == ["a", "b", "c", "d"]
    assert as_dict(fused) == pytest.approx(expected)


def test_rrf_weight_zero_or_missing_drops_the_source():
    only_bm25 = {"a": 1 / 61, "b": 1 / 62, "c": 1 / 63}
    assert as_dict(rrf(RUNS, k=60, weights={"bm25": 1.0, "vector": 0.0})) == pytest.approx(only_bm25)
    # a source with no weight at all counts as weight 0
    assert as_dict(rrf(RUNS, k=60, weights={"bm25": 1.0})) == pytest.approx(only_bm25)
    assert "d" not in as_dict(rrf(RUNS, k=60, weights={"bm25": 1.0}))


def test_rrf_ties_within_a_run_use_the_id():
    # y and z tie in the run: y gets rank 1, z rank 2, whatever the insertion order
    for run in ({"z": 1.0, "y": 1.0}, {"y": 1.0, "z": 1.0}):
        assert rrf({"s": run}, k=1) == [("y", 1 / 2), ("z", 1 / 3)]


def test_rrf_equal_fused_scores_come_out_in_id_order_regardless_of_insertion_order():
    r1 = {"s1": {"q": 2.0, "p": 1.0}, "s2": {"p": 2.0, "q": 1.0}}
    r2 = {"s2": {"q": 1.0, "p": 2.0}, "s1": {"p": 1.0, "q": 2.0}}
    assert [i for i, _ in rrf(r1)] == [i for i, _ in rrf(r2)] == ["p", "q"]
    assert rrf(r1) == rrf(r2)


def test_rrf_rejects_non_positive_k():
    with pytest.raises(InputError, match="k must be > 0"):
        rrf(RUNS, k=0)


# ---- normalisation ---------------------------------------------------------------------------------------------------


def test_minmax():
    assert minmax({"a": 2.0, "b": 4.0, "c": 6.0}) == {"a": 0.0, "b": 0.5, "c": 1.0}
    assert minmax({"a": -1.0, "b": 3.0}) == {"a": 0.0, "b": 1.0}
    assert minmax({"a": 3.0, "b": 3.0}) == {"a": 1.0, "b": 1.0}  # zero range guard
    assert minmax({"only": 0.2}) == {"only": 1.0}
    assert minmax({}) == {}


def test_zscore_uses_population_std():
    z = zscore({"a": 1.0, "b": 2.0, "c": 3.0})
    # mean 2, population variance (1 + 0 + 1) / 3 = 2/3 (the sample std would be 1 and give -1, 0, 1)
    s = math.sqrt(2 / 3)
    assert z == pytest.approx({"a": -1 / s, "b": 0.0, "c": 1 / s})
    assert z["a"] == pytest.approx(-1.224744871391589)
    assert zscore({"a": 5.0, "b": 5.0}) == {"a": 0.0, "b": 0.0}  # zero spread
    assert zscore({}) == {}


# ---- weighted --------------------------------------------------------------------------------------------------------


def test_weighted_minmax_with_missing_items():
    runs = {"bm25": {"a": 10.0, "b": 5.0, "c": 0.0}, "vector": {"b": 0.9, "d": 0.5, "a": 0.1}}
    fused = weighted(runs, weights={"bm25": 1.0, "vector": 2.0}, normalization="minmax")
    # minmax bm25: a 1, b .5, c 0 (d missing -> lowest = 0); vector: b 1, d .5, a 0 (c missing -> 0)
    # a = 1 + 2*0 = 1; b = .5 + 2*1 = 2.5; c = 0 + 0 = 0; d = 0 + 2*.5 = 1   (a/d tie -> id order)
    assert fused == [("b", 2.5), ("a", 1.0), ("d", 1.0), ("c", 0.0)]


def test_weighted_zscore_missing_item_gets_the_sources_lowest_score():
    runs = {"bm25": {"a": 3.0, "b": 2.0, "c": 1.0}, "vector": {"b": 4.0, "d": 2.0}}
    fused = weighted(runs, normalization="zscore")  # no weights: every source 1.0
    s = math.sqrt(2 / 3)
    # bm25 z: a 1/s, b 0, c -1/s; d missing -> -1/s.  vector z (mean 3, std 1): b 1, d -1; a, c missing -> -1
    expected = {"a": 1 / s - 1, "b": 0 + 1, "c": -1 / s - 1, "d": -1 / s - 1}
    assert [i for i, _ in fused] == ["b", "a", "c", "d"]  # c/d tie -> id order
    assert as_dict(fused) == pytest.approx(expected)
    # with a 0 for the missing bm25 score d would be 0 - 1 = -1, above c; the floor rule ties them instead
    assert as_dict(fused)["d"] == pytest.approx(as_dict(fused)["c"])
    assert as_dict(fused)["d"] < -2


def test_weighted_zero_weight_drops_the_source_and_unknown_normalization_fails():
    runs = {"bm25": {"a": 1.0, "b": 3.0}, "vector": {"a": 9.0, "b": 1.0}}
    assert weighted(runs, weights={"bm25": 1.0, "vector": 0.0}, normalization="minmax") == [("b", 1.0), ("a", 0.0)]
    with pytest.raises(InputError) as exc:
        weighted(runs, normalization="softmax")
    assert "softmax" in str(exc.value) and "minmax" in str(exc.value) and "zscore" in str(exc.value)


def test_weighted_tie_break_independent_of_insertion_order():
    r1 = {"s": {"m": 1.0, "k": 1.0, "z": 0.0}}
    r2 = {"s": {"z": 0.0, "k": 1.0, "m": 1.0}}
    assert weighted(r1, normalization="minmax") == weighted(r2, normalization="minmax") == [
        ("k", 1.0), ("m", 1.0), ("z", 0.0)
    ]


# ---- fuse and max_score --------------------------------------------------------------------------------------------


def test_fuse_dispatches_and_passes_params():
    assert fuse(RUNS, "rrf", k=1) == rrf(RUNS, k=1)
    assert fuse(RUNS) == rrf(RUNS, k=60)
    assert fuse(RUNS, "weighted", normalization="minmax") == weighted(RUNS, normalization="minmax")


def test_fuse_unknown_method_lists_supported():
    with pytest.raises(InputError) as exc:
        fuse(RUNS, "borda")
    msg = str(exc.value)
    assert "borda" in msg and "rrf" in msg and "weighted" in msg


def test_max_score():
    w = {"bm25": 1.0, "vector": 0.5}
    assert max_score("rrf", ["bm25", "vector"], w, 60) == pytest.approx(1.5 / 61)
    assert max_score("rrf", ["bm25"], w, 1) == pytest.approx(1 / 2)
    assert max_score("weighted", ["bm25", "vector"], w, 60) == 1.5
    assert max_score("rrf", ["header"], w, 60) == 1.0  # no weight: the 1.0 guard
    assert max_score("weighted", [], w, 60) == 1.0
    # an item ranked first by every source gets exactly the max score
    top = rrf({"bm25": {"a": 1.0}, "vector": {"a": 1.0}}, k=60, weights=w)
    assert top[0][1] == pytest.approx(max_score("rrf", ["bm25", "vector"], w, 60))
