"""A version's own vectors: ``vectors.npy``, one unit-length float32 row per chunk in the chunks table's order,
and which search answers over them (``search_kind``).

Every vector search here is cosine, so rows are stored unit-length (zero rows stay zero). float32, not
float16: numpy has no BLAS kernel for float16 products, so a float16 file would be converted on every load
(measured in benchmarks/vector_search.py: the same rankings, half the disk, slower to open).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import VectorSearchConfig
from ragrig.retrieval.index.format import HNSW_GRAPH, VECTORS


def unit_rows(vecs: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 (or ``dtype``): the one normaliser of vectors."""
    vecs = np.asarray(vecs, dtype=dtype)
    if not vecs.size:  # no rows (an empty version, a filter that allows none): keep the width when there is one
        return vecs if vecs.ndim == 2 else vecs.reshape(len(vecs), 0)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)


def write_vectors(version_dir: Path, vectors: np.ndarray) -> None:
    np.save(version_dir / VECTORS, np.ascontiguousarray(unit_rows(vectors), dtype=np.float32))


def read_vectors(version_dir: Path) -> np.ndarray:
    """The version's vectors, memory-mapped read-only (readers of one version share the pages)."""
    return np.load(version_dir / VECTORS, mmap_mode="r")


def shape_problem(vecs: np.ndarray, manifest: dict[str, Any]) -> str | None:
    """What makes stored vectors unusable for the version the manifest describes (not float32, not one row per
    chunk at the embedding's width), or None: the reader and ``health`` ask the same question."""
    want = (manifest["counts"]["chunks"], int(manifest["embedding"]["dim"]))
    if vecs.dtype != np.float32 or vecs.ndim != 2 or (vecs.shape != want and want[0] > 0):
        return f"{VECTORS} holds {vecs.dtype} {vecs.shape}, the manifest float32 {want}"
    return None


def search_kind(cfg: VectorSearchConfig, n_chunks: int, has_vectors: bool = True) -> str:
    """``exact``, ``hnsw`` or ``chroma``: what answers vector queries over a version of ``n_chunks`` chunks.
    A version without stored vectors (written before they were) can only be searched through Chroma."""
    if not has_vectors or cfg.mode == "chroma":
        return "chroma"
    if cfg.mode == "auto":
        return "exact" if n_chunks <= cfg.exact_max_chunks else "hnsw"
    return cfg.mode


def graph_path(version_dir: Path) -> Path:
    return version_dir / HNSW_GRAPH
