"""Vector search over a version's stored vectors: exact (one matrix product) and the seeded HNSW, with
hand-computed rankings, ties broken by chunk-id order, filters, and the same answer for a batch and for one
query, in one process and across processes."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from ragrig.configs.models import HnswConfig, VectorSearchConfig
from ragrig.retrieval.index import hnsw
from ragrig.retrieval.index.vectors import search_kind, unit_rows
from ragrig.retrieval.search.vector_search import ExactSearch, HnswSearch, top_rows


def clustered(n: int, dim: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(20, dim))
    x = unit_rows((centers[rng.integers(0, 20, n)] + 0.5 * rng.normal(size=(n, dim))).astype(np.float32))
    q = unit_rows((x[rng.integers(0, n, 40)] + 0.3 * rng.normal(size=(40, dim))).astype(np.float32))
    return x, q


# ---- the top of a score list ----------------------------------------------------------------------------
def test_top_rows_best_first_ties_by_row_also_at_the_cut():
    scores = np.array([0.5, 0.9, 0.5, 0.7, 0.5])
    rows, got = top_rows(scores, 3)
    assert rows.tolist() == [1, 3, 0] and got.tolist() == [0.9, 0.7, 0.5]  # 0.5 three times: row 0 first
    assert top_rows(scores, 4)[0].tolist() == [1, 3, 0, 2]
    assert top_rows(scores, 10)[0].tolist() == [1, 3, 0, 2, 4]
    assert top_rows(scores, 0)[0].tolist() == []


def test_top_rows_ties_follow_the_given_rank_and_rows():
    scores = np.array([0.5, 0.9, 0.5, 0.7, 0.5])
    rank = np.array([4, 0, 3, 1, 2])  # chunk-id order: row 4 sorts before rows 2 and 0
    assert top_rows(scores, 3, rank=rank)[0].tolist() == [1, 3, 4]
    assert top_rows(scores, 5, rank=rank)[0].tolist() == [1, 3, 4, 2, 0]
    # a subset of rows (a filter): positions map back to those rows
    assert top_rows(np.array([0.2, 0.8]), 2, rows=np.array([7, 3]))[0].tolist() == [3, 7]


# ---- exact ---------------------------------------------------------------------------------------------
def test_exact_search_by_hand():
    vecs = unit_rows(np.array([[1, 0], [0, 1], [1, 1], [1, 0], [-1, 0]], dtype=np.float32))
    search = ExactSearch(vecs)
    (rows, scores), = search.search(np.array([[2.0, 0.0]], dtype=np.float32), 3, None)
    # cosine with (1, 0): rows 0 and 3 tie at 1 (row 0 first), row 2 at 1/sqrt(2)
    assert rows.tolist() == [0, 3, 2] and np.allclose(scores, [1, 1, 2 ** -0.5])
    mask = np.array([False, True, True, True, True])
    (rows, _), = search.search(np.array([[1.0, 0.0]], dtype=np.float32), 10, mask)
    assert rows.tolist() == [3, 2, 1, 4]  # only allowed rows, all of them, best first
    assert search.search(np.array([[1.0, 0.0]], dtype=np.float32), 3, np.zeros(5, bool))[0][0].tolist() == []


def test_exact_search_ties_follow_chunk_id_order_not_rows():
    vecs = unit_rows(np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32))  # rows 0 and 1: the same text
    rank = np.array([1, 0, 2])  # row 1's chunk id sorts first
    (rows, _), = ExactSearch(vecs, rank).search(np.array([[1.0, 0.0]], dtype=np.float32), 1, None)
    assert rows.tolist() == [1]


def test_one_query_a_batch_and_any_thread_count_give_bit_identical_answers():
    """Each score is one dot product summed in a fixed order (a matrix-vector product per query): search() and
    search_many() agree to the last bit, with one BLAS thread or two, and so does a narrow filter's subset."""
    from threadpoolctl import threadpool_limits

    x, q = clustered(3000, 384)
    search = ExactSearch(x)
    with threadpool_limits(2):
        batch = search.search(q, 50, None)
    with threadpool_limits(1):
        for i in (0, 17, 39):
            (rows, scores), = search.search(q[i : i + 1], 50, None)
            assert np.array_equal(rows, batch[i][0]) and np.array_equal(scores, batch[i][1])
    narrow = np.zeros(3000, bool)
    narrow[batch[5][0][:20]] = True  # the query's own top 20 as a narrow filter: the same scores, bit for bit
    rows, scores = search.search(q[5:6], 20, narrow)[0]
    assert np.array_equal(rows, batch[5][0][:20]) and np.array_equal(scores, batch[5][1][:20])


def test_a_narrow_filter_scores_only_its_rows_and_agrees_with_the_full_product():
    x, q = clustered(400)
    search = ExactSearch(x)
    narrow = np.zeros(400, bool)
    narrow[::10] = True  # 10 %: the subset path
    wide = ~narrow  # 90 %: the masked full product
    for mask in (narrow, wide):
        got = search.search(q, 15, mask)
        for i, (rows, scores) in enumerate(got):
            allowed = np.flatnonzero(mask)
            s = x[allowed] @ q[i]
            want = allowed[np.lexsort((allowed, -s))][:15]
            assert rows.tolist() == want.tolist() and mask[rows].all()
            assert np.allclose(scores, np.sort(s)[::-1][:15], atol=1e-6)


# ---- the seeded HNSW -----------------------------------------------------------------------------------
def test_hnsw_answers_are_rescored_exactly_and_close_to_exact():
    x, q = clustered(3000)
    cfg = HnswConfig()
    approx = HnswSearch(x, [hnsw.build(x, cfg)], cfg.expansion_search)
    exact = ExactSearch(x).search(q, 10, None)
    found = approx.search(q, 10, None)
    recall = np.mean([len(set(a[0].tolist()) & set(e[0].tolist())) / 10 for a, e in zip(found, exact)])
    assert recall >= 0.9
    for i, (rows, scores) in enumerate(found):  # a found chunk's score is its exact cosine, not a graph distance
        assert np.array_equal(rows, rows[np.lexsort((rows, -scores))])
        assert np.allclose(scores, [float(np.dot(x[r], q[i])) for r in rows], atol=1e-6)


def test_hnsw_filters_keep_only_allowed_rows():
    x, q = clustered(2000)
    cfg = HnswConfig()
    approx = HnswSearch(x, [hnsw.build(x, cfg)], cfg.expansion_search)
    wide = np.ones(2000, bool)
    wide[::3] = False  # two thirds allowed: the graph, asked for more, then filtered
    narrow = np.zeros(2000, bool)
    narrow[:100] = True  # 5 %: exact over the allowed rows
    for mask in (wide, narrow):
        for rows, _ in approx.search(q, 20, mask):
            assert len(rows) == 20 and mask[rows].all()


GRAPH_CHILD = textwrap.dedent("""
    import hashlib, sys, numpy as np
    from ragrig.configs.models import HnswConfig
    from ragrig.retrieval.index import hnsw
    from ragrig.retrieval.index.vectors import unit_rows
    rng = np.random.default_rng(5)
    x = unit_rows(rng.normal(size=(3000, 48)).astype(np.float32))
    q = unit_rows(rng.normal(size=(50, 48)).astype(np.float32))
    g = hnsw.build(x, HnswConfig())
    g.save(sys.argv[1])
    m = g.search(q, 10)
    print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest(), hashlib.sha256(m.keys.tobytes()).hexdigest())
""")


@pytest.mark.slow
def test_the_hnsw_graph_is_the_same_in_two_processes(tmp_path):
    """One build thread, rows in order: two processes build the same graph file and the same answers (with two
    build threads, or Chroma's HNSW even with one, they do not: docs/determinism.md)."""
    out = [subprocess.run([sys.executable, "-c", GRAPH_CHILD, str(tmp_path / f"g{i}.usearch")], capture_output=True,
                          text=True, timeout=120, check=True).stdout.split() for i in range(2)]
    assert out[0] == out[1] and len(out[0]) == 2
    assert hashlib.sha256((tmp_path / "g0.usearch").read_bytes()).hexdigest() == out[0][0]


# ---- which search answers ------------------------------------------------------------------------------
@pytest.mark.parametrize(("mode", "n", "has", "kind"), [
    ("auto", 50_000, True, "exact"), ("auto", 50_001, True, "hnsw"), ("auto", 10, False, "chroma"),
    ("exact", 10**7, True, "exact"), ("hnsw", 3, True, "hnsw"), ("chroma", 3, True, "chroma"),
    ("exact", 3, False, "chroma"),
])
def test_search_kind(mode, n, has, kind):
    assert search_kind(VectorSearchConfig(mode=mode, exact_max_chunks=50_000), n, has) == kind


def test_stored_vectors_must_be_float32_one_row_per_chunk_at_the_manifest_width():
    from ragrig.retrieval.index.vectors import shape_problem

    manifest = {"counts": {"chunks": 3}, "embedding": {"dim": 4}}
    assert shape_problem(np.zeros((3, 4), np.float32), manifest) is None
    assert shape_problem(np.zeros((3, 4), np.float64), manifest) == \
        "vectors.npy holds float64 (3, 4), the manifest float32 (3, 4)"
    assert shape_problem(np.zeros((2, 4), np.float32), manifest) == \
        "vectors.npy holds float32 (2, 4), the manifest float32 (3, 4)"
    assert shape_problem(np.zeros((0, 0), np.float32), {"counts": {"chunks": 0}, "embedding": {"dim": 4}}) is None
