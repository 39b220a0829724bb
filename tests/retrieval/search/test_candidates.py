"""Candidate sets: the union of a query's source runs in chunk-id order, per-source ranks by (-score, id),
normalised scores aligned to the union with the source's floor for what it did not return, duplicate groups."""

from __future__ import annotations

import numpy as np
from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, ChunkOrder, DedupKeys, SourceRun
from ragrig.retrieval.search.fusion import minmax

IDS = ["d#10", "d#2", "a#1", "d#1"]  # rows 0..3; chunk-id order: a#1, d#1, d#10, d#2


def test_chunk_order_is_string_order_of_ids():
    order = ChunkOrder.of(IDS)
    assert [IDS[r] for r in order.row] == ["a#1", "d#1", "d#10", "d#2"]
    assert order.rank.tolist() == [2, 3, 0, 1]


def test_set_ranks_by_score_then_id_and_aligns_to_the_union():
    order = ChunkOrder.of(IDS)
    runs = {"vector": SourceRun.of([(1, 0.5), (0, 0.5), (2, 0.1)]),  # d#2 and d#10 tie: d#10 ranks first by id
            "bm25": SourceRun.of([(3, 7.0)]), "header": SourceRun.of([])}
    cs = CandidateSet.build(runs, order, None)
    assert [IDS[r] for r in cs.rows] == ["a#1", "d#1", "d#10", "d#2"]
    assert list(cs.runs) == ["bm25", "vector"]  # SOURCES order; an empty run is not present
    assert cs.rank["vector"].tolist() == [3, 0, 1, 2]
    assert cs.rank["bm25"].tolist() == [0, 1, 0, 0]
    assert cs.score["vector"].tolist() == [0.1, 0.0, 0.5, 0.5]
    assert cs.sources_of(1) == {"bm25": (1, 7.0)} and cs.sources_of(0) == {"vector": (3, 0.1)}
    # min-max of the vector run in run order (0.5, 0.5, 0.1) -> (1, 1, 0); d#1 missing -> the floor, 0
    assert cs.normalised("vector", "minmax", minmax).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert cs.normalised("bm25", "minmax", minmax).tolist() == [1.0, 1.0, 1.0, 1.0]  # one item: zero range


def test_groups_name_the_one_key_a_row_shares_or_give_up():
    order = ChunkOrder.of(IDS)
    dedup = DedupKeys.build([(("t", 1),), (("t", 1),), (("t", 2), ("s", 9)), (("t", 3), ("s", 9))])
    assert dedup.prone.tolist() == [True, True, True, True]
    both = CandidateSet.build({"bm25": SourceRun.of([(0, 1.0), (1, 0.9), (2, 0.8), (3, 0.7)])}, order, dedup)
    # rows in id order a#1 (t2,s9), d#1 (t3,s9), d#10 (t1), d#2 (t1): s9 -> group 0, t1 -> group 1
    assert both.group is not None and both.group.tolist() == [0, 0, 1, 1]
    alone = CandidateSet.build({"bm25": SourceRun.of([(0, 1.0), (2, 0.8)])}, order, dedup)
    assert alone.group is not None and alone.group.tolist() == [-1, -1]  # the partners are not candidates here
    two = DedupKeys.build([(("t", 1),), (("t", 1), ("s", 9)), (("s", 9),), (("z", 0),)])
    assert CandidateSet.build({"bm25": SourceRun.of([(0, 1.0), (1, 0.9), (2, 0.8)])}, order, two).group is None


def test_batch_lays_sets_end_to_end_with_groups_unique_across_queries():
    order = ChunkOrder.of(IDS)
    dedup = DedupKeys.build([(("t", 1),), (("t", 1),), (("t", 2),), (("t", 3),)])
    s1 = CandidateSet.build({"bm25": SourceRun.of([(0, 1.0), (1, 0.5)])}, order, dedup)
    s2 = CandidateSet.build({"vector": SourceRun.of([(1, 0.3), (0, 0.2), (3, 0.1)])}, order, dedup)
    b = CandidateBatch.of([s1, s2])
    assert b.seg.tolist() == [0, 0, 1, 1, 1] and b.bounds().tolist() == [0, 2, 5]
    assert b.present == [("bm25",), ("vector",)] and b.sources == ["bm25", "vector"]
    # s1 in id order: d#10 (row 0), d#2 (row 1); s2: d#1 (3), d#10 (0), d#2 (1)
    assert np.array_equal(b.rows, np.array([0, 1, 3, 0, 1]))
    assert b.rank["bm25"].tolist() == [1, 2, 0, 0, 0] and b.rank["vector"].tolist() == [0, 0, 3, 2, 1]
    groups = b.groups()  # rows 0 and 1 share a text: one group per query, numbered across the batch
    assert groups is not None and groups.tolist() == [0, 0, -1, 1, 1]
