"""A saved bm25s index read and scored without importing bm25s.

Importing bm25s imports ``scipy.sparse`` (~0.4 s of a quiet 2-core machine, more under load: the largest part of
opening a small index, paid by every cold ``ragrig query``, eval and server), and a reader needs none of it:
bm25s saves plain numpy arrays (the CSC matrix of precomputed per-term document scores) beside two JSON files, and
scores a query with numpy alone. ``SavedBm25`` loads those files as ``BM25.load`` does (``allow_pickle=False``;
memory-mapped on request) and scores as ``BM25.get_scores`` does, step for step, so the scores are the same bits
(``tests/retrieval/index/test_bm25_read.py`` compares them with bm25s' own on every saved method). Building an
index still uses bm25s (``bm25.py``, ``bm25_shards.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_NONOCCURRENCE = ("bm25l", "bm25+")  # bm25s' methods_requiring_nonoccurrence


class SavedBm25:
    """What a reader uses of ``bm25s.BM25``: ``vocab_dict``, ``scores`` (``data``, ``indices``, ``indptr``,
    ``num_docs``) and ``get_scores(tokens)``."""

    def __init__(self, path: Path, *, mmap: bool = False) -> None:
        params = json.loads((path / "params.index.json").read_text(encoding="utf-8"))
        self.method = str(params.get("method", "lucene"))
        self.dtype = np.dtype(params.get("dtype", "float32"))
        self.int_dtype = np.dtype(params.get("int_dtype", "int32"))
        self.vocab_dict: dict[str, int] = json.loads((path / "vocab.index.json").read_text(encoding="utf-8"))
        mode = "r" if mmap else None
        self.scores = {
            "data": np.load(path / "data.csc.index.npy", allow_pickle=False, mmap_mode=mode),
            "indices": np.load(path / "indices.csc.index.npy", allow_pickle=False, mmap_mode=mode),
            "indptr": np.load(path / "indptr.csc.index.npy", allow_pickle=False, mmap_mode=mode),
            "num_docs": params.get("num_docs"),
        }
        self.nonoccurrence_array = None
        if self.method in _NONOCCURRENCE:
            nnoc = path / "nonoccurrence_array.index.npy"
            if not nnoc.exists():
                raise FileNotFoundError(f"Non-occurrence array not found at {nnoc}")
            self.nonoccurrence_array = np.load(nnoc, allow_pickle=False)

    def get_scores(self, tokens: Sequence[str]) -> np.ndarray:
        """Every document's score for ``tokens`` (those outside the vocabulary left out), as bm25s computes it:
        the query's columns added into a zero vector in token order with ``np.add.at``, then the non-occurrence
        scores of BM25L / BM25+."""
        ids = np.asarray([self.vocab_dict[t] for t in tokens if t in self.vocab_dict], dtype=self.int_dtype)
        data, indices, indptr = self.scores["data"], self.scores["indices"], self.scores["indptr"]
        if int(ids.max(initial=0)) >= len(indptr) - 1:
            raise ValueError(f"a query token id ({int(ids.max())}) is outside the index's {len(indptr) - 1} terms")
        starts, ends = indptr[ids], indptr[ids + 1]
        scores = np.zeros(self.scores["num_docs"], dtype=self.dtype)
        for start, end in zip(starts, ends):
            np.add.at(scores, indices[start:end], data[start:end])
        if self.nonoccurrence_array is not None:
            scores += self.nonoccurrence_array[ids].sum()
        return scores
