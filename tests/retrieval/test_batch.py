"""Batch fusion (retrieval/batch.py) on hand-built candidates with hand-computed scores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.search.batch import flatten, fuse_select


@dataclass
class Cands:
    ids: list[str]
    rows: np.ndarray
    ranks: dict[str, tuple[np.ndarray, np.ndarray]]
    group: np.ndarray | None


def cands(ids, ranks, group=None):
    """``ranks``: per source, a rank per id (0 = absent)."""
    arrays = {s: (np.array(r, dtype=float), np.array(r) > 0) for s, r in ranks.items()}
    return Cands(ids, np.arange(len(ids)), arrays, np.array(group if group is not None else [-1] * len(ids)))


# query 0: a (bm25 1, vector 2), b (bm25 2), c (vector 1); query 1 has only BM25: d (1), e (2)
Q0 = cands(["a", "b", "c"], {"bm25": [1, 2, 0], "vector": [2, 0, 1]}, group=[0, -1, 0])
Q1 = cands(["d", "e"], {"bm25": [1, 2]})
FLAT = flatten([Q0, Q1], [("bm25", "vector"), ("bm25",)])


def rrf(k=10.0, **kw):
    return RetrievalConfig.model_validate({"fusion": {"method": "rrf", "rrf_k": k, "weights": {"bm25": 1.0, "vector": 1.0}},
                                           **kw})


def ids(order, bounds):
    names = [*Q0.ids, *Q1.ids]
    return [[names[i] for i in order[bounds[q]:bounds[q + 1]]] for q in range(len(bounds) - 1)]


def test_flatten_lays_queries_end_to_end_with_groups_unique_across_queries():
    assert FLAT.seg.tolist() == [0, 0, 0, 1, 1] and FLAT.sources == ["bm25", "vector"]
    assert FLAT.ranks["vector"].tolist() == [2, 0, 1, 0, 0] and FLAT.has["vector"].tolist() == [1, 0, 1, 0, 0]
    q2 = cands(["f", "g"], {"bm25": [1, 2]}, group=[0, 0])
    flat = flatten([Q0, q2], [("bm25", "vector"), ("bm25",)])
    assert flat.group.tolist() == [0, -1, 0, 1, 1]  # query 2's group 0 is not query 0's


def test_rrf_scores_each_query_over_its_own_sources_and_keeps_the_first_of_a_group():
    order, scores, bounds = fuse_select(FLAT, rrf(dedup=False), top_k=10)
    # query 0: a = 1/11 + 1/12, c = 1/11, b = 1/12, over the best possible 2/11; query 1 over 1/11 (BM25 only)
    assert ids(order, bounds) == [["a", "c", "b"], ["d", "e"]]
    assert scores.tolist() == pytest.approx([(1 / 11 + 1 / 12) / (2 / 11), 0.5, (1 / 12) / (2 / 11), 1.0, 11 / 12])
    order, scores, bounds = fuse_select(FLAT, rrf(), top_k=10)
    assert ids(order, bounds) == [["a", "b"], ["d", "e"]]  # c shares a's group and ranks below it


def test_top_k_and_min_relevance_cut_each_query_separately():
    order, _, bounds = fuse_select(FLAT, rrf(dedup=False), top_k=1)
    assert ids(order, bounds) == [["a"], ["d"]]
    order, scores, bounds = fuse_select(FLAT, rrf(dedup=False, min_relevance=0.5), top_k=10)
    assert ids(order, bounds) == [["a", "c"], ["d", "e"]]  # b (0.458) is below; c is exactly 0.5


def test_ties_keep_id_order_within_a_query():
    q = cands(["x", "y", "z"], {"bm25": [2, 0, 3], "vector": [0, 2, 1]})
    flat = flatten([q], [("bm25", "vector")])
    order, scores, _ = fuse_select(flat, rrf(), top_k=3)
    # x = 1/12 (bm25 2), y = 1/12 (vector 2): a tie broken by id; z = 1/13 + 1/11 first
    assert [q.ids[i] for i in order] == ["z", "x", "y"] and scores[1] == scores[2]


def test_weighted_min_max_scales_each_query_to_0_1_and_drops_queries_without_weighted_sources():
    r = RetrievalConfig.model_validate({"dedup": False, "fusion": {"method": "weighted", "normalization": "minmax",
                                                   "weights": {"bm25": 0.0, "vector": 1.0}}})
    normed = {("bm25", "minmax"): np.array([1.0, 0.0, 0.0, 1.0, 0.0]),
              ("vector", "minmax"): np.array([0.4, 0.0, 1.0, 0.0, 0.0])}
    order, scores, bounds = fuse_select(FLAT, r, top_k=10, normed=normed)
    # query 0: c 1.0, a 0.4, b 0.0 -> scaled over [0, 1]; query 1 has no vector source: no result
    assert ids(order, bounds) == [["c", "a", "b"], []]
    assert scores.tolist() == pytest.approx([1.0, 0.4, 0.0])
