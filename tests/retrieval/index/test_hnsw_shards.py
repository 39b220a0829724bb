"""The HNSW graph in shards (``index/hnsw.py``): where the rows are cut, what the manifest records (one graph's
record as it always was), the same files whoever builds the shards and in whatever order, every shard searched
and rescored exactly, a reader that opens the files rather than rebuilding, and a damaged shard refused."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from ragrig.configs.errors import InputError
from ragrig.configs.models import HnswConfig, RagrigConfig
from ragrig.retrieval.executor import Executor
from ragrig.retrieval.index import hnsw
from ragrig.retrieval.index.format import read_chunks, read_documents, read_manifest
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.build import build_version, write_vector_files
from ragrig.retrieval.ingest.current import outdated
from ragrig.retrieval.search.vector_search import ExactSearch, HnswSearch, open_vector_search

ROOT = Path(__file__).resolve().parents[3]
LEGACY = ROOT / "tests" / "fixtures" / "index-v1" / "v000001"


def clustered(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, dim))
    x = centres[rng.integers(0, 12, n)] + 0.4 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def config(tmp_path: Path, *pairs: tuple[str, Any]) -> RagrigConfig:
    raw = yaml.safe_load((LEGACY / "config.yaml").read_text())
    raw.pop("flow")  # runner settings, renamed since the fixture was written; no part of what an index holds
    raw["home"] = str(tmp_path / "home")
    raw["index"]["vector_search"] = {"mode": "hnsw", "hnsw": {}}
    for key, value in pairs:
        raw["index"]["vector_search"]["hnsw"][key] = value
    return RagrigConfig.model_validate(raw)


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("vectors.hnsw*"))}


class Reversed(Executor):
    """Maps its calls last to first (and says it is distributed): the files must not depend on the order."""

    distributed = True

    def map(self, name: str, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        done = {i: fn(*calls[i]) for i in reversed(range(len(calls)))}
        yield from (done[i] for i in range(len(calls)))


def test_rows_are_cut_in_contiguous_shards_and_one_graph_keeps_its_old_record():
    cfg = HnswConfig(shard_max_chunks=1_000)
    assert hnsw.bounds(cfg, 2_500) == [(0, 834), (834, 1_667), (1_667, 2_500)]
    assert hnsw.bounds(cfg, 1_000) == [(0, 1_000)] and hnsw.bounds(cfg, 0) == [(0, 0)]
    assert hnsw.params(cfg, 2_500) == {"connectivity": 16, "expansion_add": 128, "shards": 3}
    assert hnsw.params(cfg, 1_000) == {"connectivity": 16, "expansion_add": 128}  # what every version recorded
    assert hnsw.params(HnswConfig(), 250_000) == {"connectivity": 16, "expansion_add": 128}
    assert hnsw.params(HnswConfig(), 250_001)["shards"] == 2
    assert hnsw.bounds(HnswConfig(shards=2), 5) == [(0, 3), (3, 5)]
    assert hnsw.file_names(1) == ["vectors.hnsw"]
    assert hnsw.file_names(3) == ["vectors.hnsw.000", "vectors.hnsw.001", "vectors.hnsw.002"]
    with pytest.raises(ValueError, match="shard_max_chunks"):
        HnswConfig(shard_max_chunks=10)


def test_the_shards_are_the_same_files_whoever_builds_them_in_whatever_order(tmp_path):
    cfg = config(tmp_path, ("shard_max_chunks", 1_000))
    x = clustered(2_500)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    assert write_vector_files(cfg, one, x, 16) == {"connectivity": 16, "expansion_add": 128, "shards": 3}
    assert write_vector_files(cfg, two, x, 16, Reversed()) == {"connectivity": 16, "expansion_add": 128, "shards": 3}
    assert list(digests(one)) == ["vectors.hnsw.000", "vectors.hnsw.001", "vectors.hnsw.002"]
    assert digests(one) == digests(two)
    files = ["vectors.hnsw.000", "vectors.hnsw.001", "vectors.hnsw.002", "vectors.npy"]
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir()) == files  # no temp file
    # keys are the version's rows: shard 1 holds rows 834..1666
    assert sorted(int(k) for k in hnsw.load(one / "vectors.hnsw.001").keys) == list(range(834, 1_667))
    # exact search needs no graph
    exact = config(tmp_path, ("shard_max_chunks", 1_000))
    exact.index.vector_search.mode = "exact"
    three = tmp_path / "three"
    three.mkdir()
    assert write_vector_files(exact, three, x, 16) is None and digests(three) == {}


def test_the_stored_shard_count_is_read_only_from_a_record_with_the_same_parameters():
    want = {"connectivity": 16, "expansion_add": 128}
    assert hnsw.stored_shards(want, want, 10) == 1
    assert hnsw.stored_shards({**want, "shards": 3}, want, 10) == 3  # the config asks one graph, the files are 3
    assert hnsw.stored_shards({**want, "shards": 3}, {**want, "shards": 2}, 10) == 3
    assert hnsw.stored_shards({"connectivity": 8, "expansion_add": 128}, want, 10) is None
    for bad in ("3", 0, -1, True, 11, 10**9):  # a record no ingest writes: never trusted, never 10**9 names
        assert hnsw.stored_shards({**want, "shards": bad}, want, 10) is None
    assert hnsw.stored_shards(None, want, 10) is None and hnsw.stored_shards("x", want, 10) is None


def test_every_shard_is_searched_and_rescored_exactly(tmp_path):
    cfg = HnswConfig(shard_max_chunks=1_000, expansion_search=256)
    x = clustered(2_500)
    graphs = [hnsw.build(x[lo:hi], cfg, first_row=lo) for lo, hi in hnsw.bounds(cfg, len(x))]
    sharded, exact = HnswSearch(x, graphs, cfg.expansion_search), ExactSearch(x)
    q = clustered(40, seed=7)
    got, want = sharded.search(q, 10, None), exact.search(q, 10, None)
    for (g_rows, g_scores), (w_rows, w_scores) in zip(got, want):
        assert g_rows.tolist() == w_rows.tolist() and g_scores.tolist() == w_scores.tolist()
    hits = {int(r) for rows, _ in got for r in rows}
    assert all(any(lo <= r < hi for r in hits) for lo, hi in hnsw.bounds(cfg, len(x)))  # every shard answered
    mask = np.zeros(len(x), dtype=bool)
    mask[::2] = True  # a filter: half the rows
    for (g_rows, _), (w_rows, _) in zip(sharded.search(q, 10, mask), exact.search(q, 10, mask)):
        assert g_rows.tolist() == w_rows.tolist() and all(mask[g_rows])


def test_a_sharded_version_is_recorded_opened_from_its_files_and_checked(tmp_path, monkeypatch, caplog):
    docs, chunks = list(read_documents(LEGACY)), read_chunks(LEGACY)
    cfg = config(tmp_path, ("shards", 2))
    layout = Layout(cfg)
    vectors = np.random.default_rng(3).normal(size=(len(chunks), 384)).astype(np.float32)
    version = build_version(cfg, layout, docs, chunks, vectors, model_id="m", dim=384, corpus_kind="directory")
    vdir = layout.version_dir(version)
    manifest = read_manifest(vdir)
    assert manifest["vectors"]["hnsw"] == {"connectivity": 16, "expansion_add": 128, "shards": 2}
    assert {"vectors.hnsw.000", "vectors.hnsw.001"} <= set(manifest["files"]) and not (vdir / "vectors.hnsw").exists()
    assert outdated(cfg, layout, version) is None
    one_graph = config(tmp_path, ("shards", 1))  # the config changed since: the next ingest rebuilds the graph
    assert "no HNSW graph built with this config" in (outdated(one_graph, layout, version) or "")

    def no_build(*args, **kwargs):
        raise AssertionError("the reader rebuilt a graph ingest wrote")

    monkeypatch.setattr(hnsw, "build", no_build)
    opened = IndexVersion(cfg, layout, version)
    search = open_vector_search(cfg.index.vector_search, opened, np.arange(len(chunks)))
    assert search.kind == "hnsw" and len(search.graphs) == 2 and [len(g) for g in search.graphs] == [3, 2]
    q = np.asarray(opened.vectors[[4, 1]])
    assert [rows[0] for rows, _ in search.search(q, 3, None)] == [4, 1]
    # the config's shard count changed since: the files answer as built (a warning) until the next ingest
    with caplog.at_level(logging.WARNING, logger="ragrig.retrieval.index.version"):
        kept = IndexVersion(one_graph, layout, version).hnsw_graphs(one_graph.index.vector_search.hnsw)
    assert [len(g) for g in kept] == [3, 2] and "built in 2 shard(s), the config asks for 1" in caplog.text
    monkeypatch.undo()
    other = config(tmp_path, ("shards", 1), ("connectivity", 8))  # other parameters: built in memory, as before
    assert [len(g) for g in IndexVersion(other, layout, version).hnsw_graphs(other.index.vector_search.hnsw)] == [5]
    # a damaged shard is a damaged version, never a silent rebuild or a partial answer
    (vdir / "vectors.hnsw.001").write_bytes(b"not a graph")
    from ragrig.configs.errors import IndexDamagedError

    with pytest.raises(IndexDamagedError, match="graph file is unreadable"):
        IndexVersion(cfg, layout, version).hnsw_graphs(cfg.index.vector_search.hnsw)


def test_a_shard_built_where_the_vectors_cannot_be_read_is_one_line(tmp_path):
    with pytest.raises(InputError, match="must be on a filesystem every worker shares"):
        hnsw.build_shard(str(tmp_path / "gone" / "vectors.npy"), 0, 10, HnswConfig(), str(tmp_path / "g"))
