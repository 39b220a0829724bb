"""The approximate vector index ragrig builds itself: usearch HNSW graphs over a version's unit vectors.

Deterministic by construction: one build thread, rows inserted in order, keys = row numbers, usearch's fixed
level generator. Measured (docs/determinism.md): two builds of the same 20k vectors in two processes give the
same graph file byte for byte and the same answers; with two build threads they agree on about half the
top-10 lists, and so does Chroma's HNSW even with one thread (it seeds its graph randomly).

Sharded, so the build divides by workers and stays deterministic: above ``hnsw.shard_max_chunks`` rows the graph
is ``hnsw.shards`` graphs, each over a contiguous run of rows (keys still the version's row numbers), each built
on one thread on its own (``build_shard``: anywhere that reads the version's ``vectors.npy``, a Dask worker
under a distributed ingest). A search walks every shard and rescores the union exactly
(``search.vector_search.HnswSearch``), so a row's score never depends on which shard found it. One shard is the
graph ragrig always built: the file name and the manifest's parameters are unchanged for it.

The graph is a cache of a deterministic function of ``vectors.npy`` and ``HnswConfig``: ingest writes it beside
the vectors when the version will be searched approximately; a reader that finds none (or one built with
other parameters) builds it in memory.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import MAX_SHARDS, HnswConfig
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.index.bm25_shards import shard_bounds, shard_count
from ragrig.retrieval.index.format import HNSW_GRAPH

log = logging.getLogger(__name__)


def bounds(cfg: HnswConfig, n_rows: int) -> list[tuple[int, int]]:
    """The shards' row ranges: one (0, n) up to ``shard_max_chunks`` rows with ``shards: auto``."""
    return shard_bounds(n_rows, shard_count(cfg, n_rows))


def params(cfg: HnswConfig, n_rows: int) -> dict[str, int]:
    """What the graph of ``n_rows`` vectors depends on besides the vectors (the manifest records it): the build
    parameters, and the number of shards when there is more than one (one graph's record is as it always was)."""
    out = {"connectivity": cfg.connectivity, "expansion_add": cfg.expansion_add}
    shards = len(bounds(cfg, n_rows))
    return out if shards == 1 else {**out, "shards": shards}


def stored_shards(built: Any, want: dict[str, int], n_rows: int) -> int | None:
    """How many shards a version's graph files were built in, when they were built with ``want``'s parameters
    (their count aside): the manifest's record ``built`` (``params``); None when it records no graph, other
    parameters, or a count no ingest writes."""
    if not isinstance(built, dict):
        return None
    shards = built.get("shards", 1)
    if not isinstance(shards, int) or isinstance(shards, bool) or not 1 <= shards <= max(1, min(n_rows, MAX_SHARDS)):
        return None
    same = {k: v for k, v in built.items() if k != "shards"} == {k: v for k, v in want.items() if k != "shards"}
    return shards if same else None


def file_names(shards: int) -> list[str]:
    """The graph files of a version: ``vectors.hnsw`` for one graph, ``vectors.hnsw.000``, ``.001``, … else."""
    return [HNSW_GRAPH] if shards == 1 else [f"{HNSW_GRAPH}.{i:03d}" for i in range(shards)]


def build(vectors: np.ndarray, cfg: HnswConfig, threads: int = 1, first_row: int = 0) -> Any:
    """The graph over ``vectors`` (unit rows), keyed ``first_row``, ``first_row + 1``, …. ``threads`` is 1
    everywhere ragrig builds one: more threads build faster but not deterministically (a benchmark measuring
    search on a huge index may pass more)."""
    from usearch.index import Index

    graph = Index(ndim=int(vectors.shape[1]) if vectors.ndim == 2 and vectors.shape[1] else 1, metric="ip",
                  dtype="f32", connectivity=cfg.connectivity, expansion_add=cfg.expansion_add,
                  expansion_search=cfg.expansion_search)
    if len(vectors):
        graph.add(np.arange(first_row, first_row + len(vectors), dtype=np.uint64),
                  np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)
    return graph


def build_shard(vectors_file: str, lo: int, hi: int, cfg: HnswConfig, out_file: str) -> str:
    """Build the graph of rows ``lo:hi`` of ``vectors_file`` (a version's ``vectors.npy``, memory-mapped) and
    write it to ``out_file`` (atomically: a worker killed mid-write leaves no file a reader would take; the
    version's files are made durable together when it is complete). Runs wherever the executor puts it;
    returns ``out_file``'s name."""
    try:
        vectors = np.load(vectors_file, mmap_mode="r")
    except OSError as exc:
        from ragrig.configs.errors import InputError

        raise InputError(f"cannot read {vectors_file} ({exc.strerror or exc}) where the graph shard was built: "
                         "with flow.runner: dask the ragrig home must be on a filesystem every worker shares, at "
                         "the same path; nothing was published") from None
    write_atomic(Path(out_file), build(vectors[lo:hi], cfg, first_row=lo).save(), durable=False)
    return Path(out_file).name


def save(graph: Any, path: Path) -> None:
    graph.save(str(path))


def load(path: Path) -> Any:
    """The saved graph, memory-mapped (read-only: a reader never changes a version)."""
    from usearch.index import Index

    graph = Index.restore(str(path), view=True)
    if graph is None:
        raise ValueError(f"{path.name} is not a usearch index")
    return graph
