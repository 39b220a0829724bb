"""The approximate vector index ragrig builds itself: a usearch HNSW graph over a version's unit vectors.

Deterministic by construction: one build thread, rows inserted in order, keys = row numbers, usearch's fixed
level generator. Measured (docs/determinism.md): two builds of the same 20k vectors in two processes give the
same graph file byte for byte and the same answers; with two build threads they agree on about half the
top-10 lists, and so does Chroma's HNSW even with one thread (it seeds its graph randomly).

The graph is a cache of a deterministic function of ``vectors.npy`` and ``HnswConfig``: ingest writes it beside
the vectors when the version will be searched approximately; a reader that finds none (or one built with
other parameters) builds it in memory.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import HnswConfig

log = logging.getLogger(__name__)


def params(cfg: HnswConfig) -> dict[str, int]:
    """What the graph depends on besides the vectors (the manifest records it beside the file)."""
    return {"connectivity": cfg.connectivity, "expansion_add": cfg.expansion_add}


def build(vectors: np.ndarray, cfg: HnswConfig, threads: int = 1) -> Any:
    """The graph over ``vectors`` (unit rows). ``threads`` is 1 everywhere ragrig builds one: more threads build
    faster but not deterministically (a benchmark measuring search on a huge index may pass more)."""
    from usearch.index import Index

    graph = Index(ndim=int(vectors.shape[1]) if vectors.ndim == 2 and vectors.shape[1] else 1, metric="ip",
                  dtype="f32", connectivity=cfg.connectivity, expansion_add=cfg.expansion_add,
                  expansion_search=cfg.expansion_search)
    if len(vectors):
        graph.add(np.arange(len(vectors), dtype=np.uint64), np.ascontiguousarray(vectors, dtype=np.float32),
                  threads=threads)
    return graph


def save(graph: Any, path: Path) -> None:
    graph.save(str(path))


def load(path: Path) -> Any:
    """The saved graph, memory-mapped (read-only: a reader never changes a version)."""
    from usearch.index import Index

    graph = Index.restore(str(path), view=True)
    if graph is None:
        raise ValueError(f"{path.name} is not a usearch index")
    return graph
