"""BM25 over chunk search text (header path + body), on bm25s sparse matrices.

Chosen over rank-bm25 by measurement (benchmarks/bm25_engines.py): bm25s precomputes
per-term document scores into a CSC matrix, so a query is a sum of a few sparse
columns instead of a Python loop over every document. Persisted with bm25s' own
numpy/JSON format, loaded with ``allow_pickle=False``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.tokenize import Tokenizer


def _bm25s():  # type: ignore[no-untyped-def]
    """bm25s, imported on first use. Its import sets its own logger to DEBUG ("Building index from tokens" on
    every build), so the level is put back to WARNING after the import, not before it."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def tokenizer_for(cfg: Bm25Config) -> Tokenizer:
    return Tokenizer(stopwords=cfg.stopwords, stemmer=cfg.stemmer)


EMPTY = "empty.json"  # the whole BM25 folder of a version with no chunks (bm25s cannot index an empty corpus)


class Bm25Index:
    def __init__(self, retriever, cfg: Bm25Config) -> None:  # type: ignore[no-untyped-def]
        self._r = retriever  # None: an index of no documents
        self.cfg = cfg
        self.tokenizer = tokenizer_for(cfg)
        self.size = int(retriever.scores["num_docs"]) if retriever is not None else 0

    @classmethod
    def build(cls, texts: Sequence[str], cfg: Bm25Config) -> Bm25Index:
        if not texts:
            return cls(None, cfg)
        bm25s = _bm25s()
        tok = tokenizer_for(cfg)
        corpus = [tok(t) or [""] for t in texts]
        r = bm25s.BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
        r.index(corpus, show_progress=False)
        return cls(r, cfg)

    def save(self, path: Path) -> None:
        if self._r is None:
            path.mkdir(parents=True, exist_ok=True)
            (path / EMPTY).write_text(json.dumps({"num_docs": 0}) + "\n")
            return
        self._r.save(str(path), show_progress=False, allow_pickle=False)

    @classmethod
    def load(cls, path: Path, cfg: Bm25Config, mmap: bool = False) -> Bm25Index:
        if (path / EMPTY).is_file():
            return cls(None, cfg)
        bm25s = _bm25s()
        r = bm25s.BM25.load(str(path), mmap=mmap, allow_pickle=False, show_progress=False)
        return cls(r, cfg)

    def scores(self, tokens: Sequence[str], mask: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every document for the query tokens (unknown tokens score nothing)."""
        if self._r is None:
            return np.zeros(0, dtype=np.float32)
        known = [t for t in tokens if t in self._r.vocab_dict]
        if not known:
            return np.zeros(self.size, dtype=np.float32)
        s = self._r.get_scores(known)
        if mask is not None:
            s = s * mask
        return s

    def search(self, tokens: Sequence[str], k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-k (row, score) with score > 0, ties broken by row order (deterministic)."""
        s = self.scores(tokens, mask)
        return top_k(s, k)


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Indices of the k highest positive scores, ordered by (-score, index)."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return []
    k = min(k, n)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # include every index tied with the k-th score so the tie-break is by index, not by partition order
        kth = scores[part].min()
        cand = np.nonzero((scores >= kth) & (scores > 0))[0]
    else:
        cand = np.nonzero(scores > 0)[0]
    order = sorted(cand.tolist(), key=lambda i: (-float(scores[i]), i))[:k]
    return [(i, float(scores[i])) for i in order if scores[i] > 0]
