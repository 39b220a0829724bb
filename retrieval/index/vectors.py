"""A version's own vectors: ``vectors.npy``, one unit-length float32 row per chunk in the chunks table's order,
and which search answers over them (``search_kind``).

Every vector search here is cosine, so rows are stored unit-length (zero rows stay zero). float32, not
float16: numpy has no BLAS kernel for float16 products, so a float16 file would be converted on every load
(measured in benchmarks/vector_search.py: the same rankings, half the disk, slower to open).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import VectorSearchConfig
from ragrig.retrieval.index.format import VECTORS
from ragrig.retrieval.npy_header import npy_header


def unit_rows(vecs: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 (or ``dtype``): the one normaliser of vectors."""
    vecs = np.asarray(vecs, dtype=dtype)
    if not vecs.size:  # no rows (an empty version, a filter that allows none): keep the width when there is one
        return vecs if vecs.ndim == 2 else vecs.reshape(len(vecs), 0)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)


def write_vectors(version_dir: Path, vectors: np.ndarray) -> None:
    vectors = np.asarray(vectors, dtype=np.float32)
    write_vector_blocks(version_dir, [vectors], len(vectors), int(vectors.shape[1]) if vectors.ndim == 2 else 0)


def write_vector_blocks(version_dir: Path, blocks: Iterable[np.ndarray], n: int, dim: int) -> None:
    """``vectors.npy`` from ``blocks`` of rows (``n`` in all, ``dim`` wide), each scaled to unit length as it is
    written: the bytes ``np.save`` writes for the whole matrix (the same header; a row's norm does not depend on
    the rows beside it), without the matrix or its unit copy in memory. Fewer or more rows than ``n`` (a source
    that changed underneath) is an error and the file is removed."""
    path = version_dir / VECTORS
    written = 0
    try:
        with open(path, "wb") as fh:
            fh.write(npy_header((n, dim), np.float32))
            for block in blocks:
                if block.ndim != 2 or (len(block) and block.shape[1] != dim):
                    raise ValueError(f"{VECTORS}: a block of shape {block.shape}, the rows are {dim} wide")
                fh.write(np.ascontiguousarray(unit_rows(block), dtype=np.float32).tobytes())
                written += len(block)
        if written != n:
            raise ValueError(f"{VECTORS}: {written} rows written, {n} expected")
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def read_vectors(version_dir: Path) -> np.ndarray:
    """The version's vectors, memory-mapped read-only (readers of one version share the pages)."""
    return np.load(version_dir / VECTORS, mmap_mode="r")


def shape_problem(vecs: np.ndarray, manifest: dict[str, Any]) -> str | None:
    """What makes stored vectors unusable for the version the manifest describes (not float32, not one row per
    chunk at the embedding's width), or None: the reader and ``health`` ask the same question."""
    want = (manifest["counts"]["chunks"], int(manifest["embedding"]["dim"]))
    if vecs.dtype != np.float32 or vecs.ndim != 2 or (vecs.shape != want and want[0] > 0):
        return f"{VECTORS} holds {vecs.dtype} {vecs.shape}, the manifest float32 {want}"
    if want[0] > 0 and want[1] <= 0:
        return f"the manifest's embedding width is {want[1]}: {VECTORS} holds no usable vectors"
    return None


def rows_problem(vecs: np.ndarray, block: int = 65_536) -> str | None:
    """Whether every stored row is a finite unit vector (what a search needs), read in blocks so a memory-mapped
    million rows cost one pass and no float64 copy of the whole: None, or what is wrong."""
    bad = 0
    for lo in range(0, len(vecs), block):
        part = np.asarray(vecs[lo : lo + block])
        with np.errstate(all="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", part, part))  # float32: 2x faster, 1e-6 off at most
        bad += int(np.sum(~np.isfinite(norms) | (np.abs(norms - 1) > 1e-3)))
    return f"{VECTORS} has {bad} rows that are not finite unit vectors" if bad else None


def vectors_problem(version_dir: Path, manifest: dict[str, Any]) -> str | None:
    """What is wrong with a version's stored vectors (unreadable, the wrong shape or width, rows that are not
    finite unit vectors), or None; versions without stored vectors have nothing to check. ``health`` and
    ingest's check of the version it would keep ask this same question."""
    if not isinstance(manifest.get("vectors"), dict):
        return None
    try:
        vecs = read_vectors(version_dir)
    except (OSError, ValueError) as exc:
        return f"vectors unreadable: {type(exc).__name__}: {str(exc)[:120]}"
    return shape_problem(vecs, manifest) or rows_problem(vecs)


def search_kind(cfg: VectorSearchConfig, n_chunks: int, has_vectors: bool = True) -> str:
    """``exact``, ``hnsw`` or ``chroma``: what answers vector queries over a version of ``n_chunks`` chunks.
    A version without stored vectors (written before they were) can only be searched through Chroma."""
    if not has_vectors or cfg.mode == "chroma":
        return "chroma"
    if cfg.mode == "auto":
        return "exact" if n_chunks <= cfg.exact_max_chunks else "hnsw"
    return cfg.mode
