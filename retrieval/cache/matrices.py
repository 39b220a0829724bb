"""Whole matrices of one encoder's vectors of one list of texts, kept beside the embedding cache
(``<home>/cache/matrices/<key>.npy``): what a view (``search/views.py``) needs at every start of a reader, read in
one file instead of thousands of embedding-cache rows (SRD 5.1's 2,815 bge-small vectors: ~7 ms instead of
44-184 ms quiet, 375 ms under load; at every cold ``ragrig query``, evaluation and server start with the
default's second encoder: docs/serve-latency.md).

Only ever a copy of what the embedding cache holds: the key is the encoder's id, its document prefix and every
text's hash, in order, so a matrix is found only for exactly those texts under exactly that encoder; a file is
used only when its bytes hash to what its record says and its shape, type and values check out (finite, the
rows asked for), else it is ignored and written again. The ``KEEP`` most recently used matrices are kept."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.npy_header import npy_header

KEEP = 16


def key(encoder_id: str, prefix: str, shas: Sequence[str]) -> str:
    h = hashlib.sha256(f"{encoder_id}\n{prefix}\n".encode())
    for sha in shas:
        h.update(sha.encode() + b"\n")
    return h.hexdigest()[:32]


def load(folder: Path, name: str, rows: int) -> np.ndarray | None:
    """The matrix saved under ``name`` when it is whole and has ``rows`` finite rows; None otherwise."""
    try:
        record = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        data = (folder / f"{name}.npy").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    try:
        matrix = np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError):
        return None
    if matrix.ndim != 2 or matrix.shape[0] != rows or list(matrix.shape) != record.get("shape") \
            or str(matrix.dtype) != record.get("dtype") or not np.isfinite(matrix).all():
        return None
    try:
        os.utime(folder / f"{name}.json")  # recently used: kept longest
    except OSError:
        pass
    return matrix


def save(folder: Path, name: str, matrix: np.ndarray) -> None:
    """Save ``matrix`` under ``name`` (``save_rows``, in one block)."""
    matrix = np.ascontiguousarray(matrix)
    save_rows(folder, name, [matrix], matrix.shape, matrix.dtype)


def save_rows(folder: Path, name: str, blocks: Iterable[np.ndarray], shape: tuple[int, ...],
              dtype: np.dtype | type = np.float32) -> None:
    """Save the matrix of ``shape`` whose rows ``blocks`` yields, in order, under ``name`` (the bytes ``np.save``
    writes; the data, then its record), never holding it whole (an ingest's view at 1M chunks is 1.5 GB), and drop
    all but the ``KEEP`` most recently used. A folder that cannot be written costs only the next reader's cache
    reads; an error from ``blocks`` leaves nothing behind and is raised."""
    dtype = np.dtype(dtype)
    digest = hashlib.sha256()

    def parts() -> Iterator[bytes]:
        for part in itertools.chain([npy_header(shape, dtype)], (np.ascontiguousarray(b, dtype=dtype).tobytes()
                                                                 for b in blocks)):
            digest.update(part)
            yield part

    try:
        write_atomic(folder / f"{name}.npy", parts(), durable=False)
        record = {"sha256": digest.hexdigest(), "shape": list(shape), "dtype": str(dtype)}
        write_atomic(folder / f"{name}.json", json.dumps(record).encode(), durable=False)
        records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in records[KEEP:]:
            old.unlink(missing_ok=True)
            old.with_suffix(".npy").unlink(missing_ok=True)
    except OSError:
        pass
