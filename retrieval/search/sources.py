"""The candidate sources over one index version: BM25, vector (Chroma) and header lookup, each returning a
``SourceRun`` per query. Vector candidates for many queries come from one Chroma call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from ragrig.configs.errors import IndexDamagedError
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.search.candidates import SourceRun


class Sources:
    def __init__(self, chunks: Sequence[Chunk], row_of: dict[str, int], bm25: Bm25Index, collection: Any,
                 headers: HeaderIndex) -> None:
        self.chunks = chunks
        self.row_of = row_of
        self.bm25_index = bm25
        self.collection = collection
        self.headers = headers
        self._vector_count: int | None = None  # a published version never changes: Chroma's count() once

    def bm25(self, text: str, depth: int, mask: np.ndarray | None) -> SourceRun:
        """The top ``depth`` chunks by BM25 over their search text, ties by row."""
        return SourceRun.of(self.bm25_index.search(self.bm25_index.tokenizer(text), depth, mask))

    def vectors(self, vecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[SourceRun]:
        """The nearest ``depth`` chunks to each query vector (cosine similarity), in one Chroma query."""
        if self._vector_count is None:
            self._vector_count = int(self._chroma(self.collection.count))
        total = self._vector_count
        empty = [SourceRun.of([]) for _ in range(len(vecs))]
        if total == 0 or len(vecs) == 0:
            return empty
        kwargs: dict[str, Any] = {}
        if mask is not None:
            allowed = [self.chunks[i].chunk_id for i in np.nonzero(mask)[0]]
            if not allowed:
                return empty
            kwargs["ids"] = allowed
            total = len(allowed)
        res = self._chroma(self.collection.query, query_embeddings=np.asarray(vecs, dtype=np.float32),
                           n_results=min(depth, total), include=["distances"], **kwargs)
        row_of = self.row_of
        try:
            return [SourceRun(np.fromiter((row_of[i] for i in ids), dtype=np.int64, count=len(ids)),
                              1.0 - np.asarray(dists, dtype=np.float64))
                    for ids, dists in zip(res["ids"], res["distances"])]
        except KeyError as exc:
            raise IndexDamagedError(f"Chroma collection {getattr(self.collection, 'name', '?')} returned id {exc} "
                                    "that is not in this version's chunks table: `ragrig health` says more, "
                                    "`ragrig ingest` rebuilds it") from None

    def _chroma(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A call on the collection; Chroma's own errors (its store removed or damaged under this reader: a
        `ragrig reset`, a deleted folder) become one ``IndexDamagedError``."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise IndexDamagedError(
                f"Chroma collection {getattr(self.collection, 'name', '?')} failed ({type(exc).__name__}: "
                f"{str(exc)[:160]}): the index was removed or damaged under this reader; `ragrig health` says "
                "which, `ragrig ingest` rebuilds it") from None

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of these chunk rows, in that order (from Chroma)."""
        if not len(rows):
            return np.zeros((0, 0), dtype=np.float32)
        ids = [self.chunks[r].chunk_id for r in rows.tolist()]
        got = self.collection.get(ids=ids, include=["embeddings"])
        by_id = dict(zip(got["ids"], got["embeddings"]))
        return np.asarray([by_id[i] for i in ids], dtype=np.float32)

    def header(self, text: str, depth: int, mask: np.ndarray | None, threshold: float) -> SourceRun:
        """Sections whose header the query names (fuzzy, ``threshold`` 0..1): each one's best similarity."""
        best: dict[int, float] = {}
        for m in self.headers.mentions(text, threshold, limit=depth):
            for row in m.rows:
                if mask is None or mask[row]:
                    best[row] = max(best.get(row, 0.0), m.score)
        return SourceRun.of(list(best.items()))
