"""The candidate sources over one index version: BM25, vector and header lookup, each returning a ``SourceRun``
per query. Vector candidates for a batch of queries come from one call of the version's vector search."""

from __future__ import annotations

import numpy as np
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.search.candidates import SourceRun
from ragrig.retrieval.search.vector_search import VectorSearch


class Sources:
    def __init__(self, bm25: Bm25Index, vectors: VectorSearch, headers: HeaderIndex) -> None:
        self.bm25_index = bm25
        self.vector_search = vectors
        self.headers = headers

    def bm25(self, text: str, depth: int, mask: np.ndarray | None) -> SourceRun:
        """The top ``depth`` chunks by BM25 over their search text, ties by row."""
        return SourceRun.of(self.bm25_index.search(self.bm25_index.tokenizer(text), depth, mask))

    def vectors(self, vecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[SourceRun]:
        """The nearest ``depth`` chunks to each query vector (cosine similarity), for the whole batch at once
        (``vector_search.py``: exact, a seeded HNSW, or Chroma)."""
        if len(vecs) == 0:
            return []
        return [SourceRun(rows, scores) for rows, scores in self.vector_search.search(vecs, depth, mask)]

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """The stored (unit) vectors of these chunk rows, in that order."""
        return self.vector_search.vectors_of(rows)

    def header(self, text: str, depth: int, mask: np.ndarray | None, threshold: float) -> SourceRun:
        """Sections whose header the query names (fuzzy, ``threshold`` 0..1): each one's best similarity."""
        best: dict[int, float] = {}
        for m in self.headers.mentions(text, threshold, limit=depth):
            for row in m.rows:
                if mask is None or mask[row]:
                    best[row] = max(best.get(row, 0.0), m.score)
        return SourceRun.of(list(best.items()))
