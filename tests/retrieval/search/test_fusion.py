"""Rank fusion on batches: RRF, score normalisation, weighted fusion, 0..1 scaling, deterministic tie-breaks,
and queries fused together staying independent (hand-computed floats)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.search.fusion import fuse, max_score, minmax, zscore
from search_batches import batch_of, fused, fusion

# Two runs over four items. bm25 ranks a, b, c; vector ranks b, a, d.
BM25 = {"a": 3.0, "b": 2.0, "c": 1.0}
VECTOR = {"b": 0.9, "a": 0.8, "d": 0.1}
RUNS = {"bm25": BM25, "vector": VECTOR}


def raw(pairs, top):
    """Undo the 0..1 scaling of RRF (divided by the best possible score)."""
    return {i: s * top for i, s in pairs}


# ---- rrf ---------------------------------------------------------------------------------------------------------


def test_rrf_k60_two_sources():
    got = fused(RUNS, "rrf", rrf_k=60)
    # a: bm25 rank 1, vector rank 2 -> 1/61 + 1/62; b: bm25 rank 2, vector rank 1 -> 1/62 + 1/61
    # c: bm25 rank 3 -> 1/63; d: vector rank 3 -> 1/63
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 63}
    assert [i for i, _ in got] == ["a", "b", "c", "d"]  # a/b and c/d tie: id order
    assert raw(got, 2 / 61) == pytest.approx(expected, abs=1e-15)


def test_rrf_scores_are_relevance_over_the_best_possible_score():
    got = dict(fused({"bm25": {"x": 5.0}, "vector": {"x": 0.5}}, "rrf", rrf_k=60))
    assert got == {"x": 1.0}  # first in every source
    got = dict(fused({"bm25": {"x": 5.0, "y": 1.0}}, "rrf", rrf_k=1))
    assert got == pytest.approx({"x": 1.0, "y": (1 / 3) / (1 / 2)})  # only bm25 returned anything: its best is 1/2


def test_rrf_k1_three_sources():
    runs = {
        "bm25": {"a": 1.0, "b": 0.5, "c": 0.2},  # a 1, b 2, c 3
        "vector": {"c": 5.0, "a": 4.0},  # c 1, a 2
        "header": {"a": 10.0},  # a 1
    }
    got = fused(runs, "rrf", rrf_k=1)
    # a: 1/2 + 1/3 + 1/2 = 4/3; c: 1/4 + 1/2 = 3/4; b: 1/3; best possible 3/2
    assert [i for i, _ in got] == ["a", "c", "b"]
    assert raw(got, 3 / 2) == pytest.approx({"a": 4 / 3, "c": 3 / 4, "b": 1 / 3})


def test_rrf_per_source_weights():
    got = fused(RUNS, "rrf", rrf_k=60, weights={"bm25": 2.0, "vector": 0.5})
    expected = {"a": 2 / 61 + 0.5 / 62, "b": 2 / 62 + 0.5 / 61, "c": 2 / 63, "d": 0.5 / 63}
    assert [i for i, _ in got] == ["a", "b", "c", "d"]
    assert raw(got, 2.5 / 61) == pytest.approx(expected)


def test_rrf_weight_zero_or_missing_drops_the_source():
    only_bm25 = {"a": 1 / 61, "b": 1 / 62, "c": 1 / 63, "d": 0.0}
    assert raw(fused(RUNS, "rrf", rrf_k=60, weights={"bm25": 1.0, "vector": 0.0}), 1 / 61) == pytest.approx(only_bm25)
    assert raw(fused(RUNS, "rrf", rrf_k=60, weights={"bm25": 1.0}), 1 / 61) == pytest.approx(only_bm25)


def test_rrf_ties_within_a_run_use_the_id():
    # y and z tie in the run: y gets rank 1, z rank 2, whatever the insertion (row) order
    for run in ({"z": 1.0, "y": 1.0}, {"y": 1.0, "z": 1.0}):
        assert fused({"bm25": run}, "rrf", rrf_k=1) == [("y", 1.0), ("z", pytest.approx((1 / 3) / (1 / 2)))]


def test_rrf_equal_fused_scores_come_out_in_id_order_regardless_of_insertion_order():
    r1 = {"bm25": {"q": 2.0, "p": 1.0}, "vector": {"p": 2.0, "q": 1.0}}
    r2 = {"vector": {"q": 1.0, "p": 2.0}, "bm25": {"p": 1.0, "q": 2.0}}
    assert [i for i, _ in fused(r1)] == [i for i, _ in fused(r2)] == ["p", "q"]
    assert fused(r1) == fused(r2)


def test_rrf_rejects_non_positive_k():
    batch, _ = batch_of([RUNS])
    f = fusion("rrf")
    object.__setattr__(f, "rrf_k", 0.0)  # the config schema refuses it; the function checks too
    with pytest.raises(InputError, match="k must be > 0"):
        fuse(batch, f)


# ---- normalisation ---------------------------------------------------------------------------------------------------


def test_minmax():
    assert minmax(np.array([2.0, 4.0, 6.0])).tolist() == [0.0, 0.5, 1.0]
    assert minmax(np.array([-1.0, 3.0])).tolist() == [0.0, 1.0]
    assert minmax(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]  # zero range guard
    assert minmax(np.array([0.2])).tolist() == [1.0]


def test_zscore_uses_population_std():
    z = zscore(np.array([1.0, 2.0, 3.0]))
    # mean 2, population variance (1 + 0 + 1) / 3 = 2/3 (the sample std would be 1 and give -1, 0, 1)
    s = math.sqrt(2 / 3)
    assert z.tolist() == pytest.approx([-1 / s, 0.0, 1 / s])
    assert z[0] == pytest.approx(-1.224744871391589)
    assert zscore(np.array([5.0, 5.0])).tolist() == [0.0, 0.0]  # zero spread


def test_zscore_sums_left_to_right_like_python():
    """A score must depend only on its own run: the mean and variance are summed in run order, as Python's sum
    does (numpy's pairwise sum rounds differently), so a run scores the same alone or in any batch."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        v = rng.standard_normal(int(rng.integers(2, 200))) * rng.uniform(0.1, 40)
        vals = v.tolist()
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((x - mean) ** 2 for x in vals) / len(vals))
        assert zscore(v).tolist() == [(x - mean) / std for x in vals]


# ---- weighted --------------------------------------------------------------------------------------------------------


def test_weighted_minmax_with_missing_items():
    runs = {"bm25": {"a": 10.0, "b": 5.0, "c": 0.0}, "vector": {"b": 0.9, "d": 0.5, "a": 0.1}}
    got = fused(runs, "weighted", weights={"bm25": 1.0, "vector": 2.0}, normalization="minmax")
    # minmax bm25: a 1, b .5, c 0 (d missing -> lowest = 0); vector: b 1, d .5, a 0 (c missing -> 0)
    # a = 1 + 2*0 = 1; b = .5 + 2*1 = 2.5; c = 0 + 0 = 0; d = 0 + 2*.5 = 1   (a/d tie -> id order)
    # then min-max over the query: b 1, a .4, d .4, c 0
    assert got == [("b", 1.0), ("a", 0.4), ("d", 0.4), ("c", 0.0)]


def test_weighted_zscore_missing_item_gets_the_sources_lowest_score():
    runs = {"bm25": {"a": 3.0, "b": 2.0, "c": 1.0}, "vector": {"b": 4.0, "d": 2.0}}
    got = fused(runs, "weighted", weights={"bm25": 1.0, "vector": 1.0}, normalization="zscore")
    s = math.sqrt(2 / 3)
    # bm25 z: a 1/s, b 0, c -1/s; d missing -> -1/s.  vector z (mean 3, std 1): b 1, d -1; a, c missing -> -1
    expected = {"a": 1 / s - 1, "b": 0 + 1, "c": -1 / s - 1, "d": -1 / s - 1}
    lo, hi = min(expected.values()), max(expected.values())
    assert [i for i, _ in got] == ["b", "a", "c", "d"]  # c/d tie -> id order
    assert dict(got) == pytest.approx({i: (v - lo) / (hi - lo) for i, v in expected.items()})
    assert dict(got)["d"] == dict(got)["c"] == 0.0  # the floor rule ties them (a 0 would have put d above c)


def test_weighted_zero_weight_drops_the_source_and_unknown_normalization_fails():
    runs = {"bm25": {"a": 1.0, "b": 3.0}, "vector": {"a": 9.0, "b": 1.0}}
    assert fused(runs, "weighted", weights={"bm25": 1.0, "vector": 0.0}, normalization="minmax") == [
        ("b", 1.0), ("a", 0.0)]
    batch, _ = batch_of([runs])
    f = fusion("weighted")
    object.__setattr__(f, "normalization", "softmax")
    with pytest.raises(InputError) as exc:
        fuse(batch, f)
    assert "softmax" in str(exc.value) and "minmax" in str(exc.value) and "zscore" in str(exc.value)


def test_weighted_tie_break_independent_of_insertion_order():
    r1 = {"bm25": {"m": 1.0, "k": 1.0, "z": 0.0}}
    r2 = {"bm25": {"z": 0.0, "k": 1.0, "m": 1.0}}
    assert fused(r1, "weighted", normalization="minmax") == fused(r2, "weighted", normalization="minmax") == [
        ("k", 1.0), ("m", 1.0), ("z", 0.0)]


def test_unknown_method_lists_supported():
    batch, _ = batch_of([RUNS])
    f = fusion("rrf")
    object.__setattr__(f, "method", "borda")
    with pytest.raises(InputError) as exc:
        fuse(batch, f)
    assert "borda" in str(exc.value) and "rrf" in str(exc.value) and "weighted" in str(exc.value)


# ---- batches ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["rrf", "weighted"])
def test_queries_fused_together_score_as_they_do_alone(method):
    """A single query is a batch of one: fusing three queries in one batch gives each the list it gets alone,
    including a query with no candidates and one that only one source answered."""
    queries = [RUNS, {}, {"vector": {"d": 0.3, "e": 0.2}}, {"bm25": {"e": 1.0, "a": 1.0}, "header": {"a": 0.9}}]
    batch, ids = batch_of(queries)
    f = fuse(batch, fusion(method))
    for q, runs in enumerate(queries):
        lo, hi = int(f.bounds[q]), int(f.bounds[q + 1])
        together = [(ids[int(batch.rows[e])], float(s)) for e, s in zip(f.order[lo:hi], f.scores[lo:hi])]
        assert together == fused(runs, method)
    assert f.bounds.tolist() == [0, 4, 4, 6, 8]


def test_max_score():
    w = {"bm25": 1.0, "vector": 0.5}
    assert max_score("rrf", ["bm25", "vector"], w, 60) == pytest.approx(1.5 / 61)
    assert max_score("rrf", ["bm25"], w, 1) == pytest.approx(1 / 2)
    assert max_score("weighted", ["bm25", "vector"], w, 60) == 1.5
    assert max_score("rrf", ["header"], w, 60) == 1.0  # no weight: the 1.0 guard
    assert max_score("weighted", [], w, 60) == 1.0
