"""Vector search over a version's stored vectors, deterministic by construction.

Three searches answer the same question (the ``depth`` chunks nearest each query vector by cosine similarity,
ties broken by row, a row mask for filters):

- ``ExactSearch``: one matrix-vector product per query over the version's unit vectors (``vectors.npy``), by
  numpy's own single-threaded ``einsum`` loop rather than BLAS. Each score is one dot product summed in a fixed
  order, so it is the same bits whatever the batch, the machine's load or the rows asked for. Measured here
  (docs/determinism.md): a BLAS matrix product sums in another order than a matrix-vector product (so ``search``
  and ``search_many`` would differ in the last bits), BLAS packs the whole matrix per call (one query through a
  matrix product: 20x slower), and BLAS's two threads, when the other core is busy, turn a 0.05 ms product over
  2k chunks into 12-16 ms; ``einsum`` took 0.1 / 0.6 / 3.2 ms at 2k / 10k / 50k chunks on that loaded machine.
- ``HnswSearch``: a usearch HNSW graph built with one thread over the rows in order (``index/hnsw.py``): the
  same vectors give the same graph, so the same answers, in every process. Its candidates are rescored exactly,
  so a chunk's score never depends on the graph, only whether it is found.
- ``ChromaSearch``: Chroma's own HNSW, for versions without stored vectors or ``mode: chroma``. Chroma builds
  its graph with a random seed (measured: two builds of the same 20k vectors, one thread, agree on 55 % of
  top-10 lists), so its answers vary from build to build: ``kind`` says so wherever results are reported.

``kind`` is what a run records (``exact`` / ``hnsw`` / ``chroma``); ``eval.compare.search_note`` says what each
means for a difference between two runs.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from ragrig.configs.errors import IndexDamagedError
from ragrig.configs.models import VectorSearchConfig
from ragrig.retrieval.index.vectors import search_kind, unit_rows
from ragrig.retrieval.index.version import IndexVersion


Found = tuple[np.ndarray, np.ndarray]  # (rows, cosine similarities), best first


class VectorSearch(Protocol):
    kind: str

    def search(self, qvecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[Found]: ...

    def vectors_of(self, rows: np.ndarray) -> np.ndarray: ...


def top_rows(scores: np.ndarray, depth: int, rows: np.ndarray | None = None,
             rank: np.ndarray | None = None) -> Found:
    """The ``depth`` best of ``scores`` (over ``rows``, default 0..n-1), best first, ties by ``rank[row]`` (the
    chunk-id order, the tie-break everywhere; default: the row). Rows tied at the cut-off score are taken in
    that order too, so the answer never depends on how the partition fell."""
    n = len(scores)
    rows = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    key = rows if rank is None else rank[rows]
    depth = min(depth, n)
    if depth <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    if depth < n:
        cut = scores[np.argpartition(-scores, depth - 1)[depth - 1]]
        above = np.flatnonzero(scores > cut)
        tied = np.flatnonzero(scores == cut)
        idx = np.concatenate([above, tied[np.argsort(key[tied], kind="stable")][: depth - len(above)]])
    else:
        idx = np.arange(n)
    idx = idx[np.lexsort((key[idx], -scores[idx]))]
    return rows[idx], scores[idx].astype(np.float64)


def dots(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's dot product with ``q``, float32, summed in one fixed order per row (see the module doc)."""
    return np.einsum("ij,j->i", vectors, q)


class ExactSearch:
    kind = "exact"

    def __init__(self, vectors: np.ndarray, rank: np.ndarray | None = None) -> None:
        self.vectors = vectors  # unit rows, float32, one per chunk (often a read-only memory map)
        self.rank = rank  # each row's place in chunk-id order: the tie-break

    def search(self, qvecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[Found]:
        q = unit_rows(qvecs)
        n = len(self.vectors)
        if n == 0 or depth <= 0:
            return [top_rows(np.zeros(0), 0) for _ in range(len(q))]
        allowed = None if mask is None else np.flatnonzero(mask)
        if allowed is not None and len(allowed) * 4 < n:  # a narrow filter: score only the rows it allows
            sub = np.ascontiguousarray(self.vectors[allowed])
            return [top_rows(dots(sub, qv), depth, allowed, self.rank) for qv in q]
        out = []
        for qv in q:
            s = dots(self.vectors, qv)
            if allowed is not None:
                s[~mask] = -np.inf
                out.append(top_rows(s, min(depth, len(allowed)), rank=self.rank))
            else:
                out.append(top_rows(s, depth, rank=self.rank))
        return out

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32)


class HnswSearch:
    """Candidates from seeded, single-threaded usearch graphs (one per shard of rows: every shard is walked),
    rescored exactly."""

    kind = "hnsw"
    OVERSAMPLE = 2  # a filter keeps a share p of the rows: ask the graph for depth / p x this, then filter

    def __init__(self, vectors: np.ndarray, graphs: list[Any], expansion_search: int,
                 rank: np.ndarray | None = None) -> None:
        self.vectors = vectors
        self.graphs = graphs
        self.rank = rank
        self.exact = ExactSearch(vectors, rank)
        for graph in graphs:
            graph.expansion_search = expansion_search

    def search(self, qvecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[Found]:
        q = unit_rows(qvecs)
        n = len(self.vectors)
        if n == 0 or depth <= 0:
            return self.exact.search(q, depth, mask)
        allowed = n if mask is None else int(mask.sum())
        if allowed * 4 < n:  # a narrow filter: exact over the rows it allows is cheaper than a filtered walk
            return self.exact.search(q, depth, mask)
        k = min(n, depth if mask is None else -(-depth * n // max(1, allowed)) * self.OVERSAMPLE)
        walks = [self._walk(graph, q, min(k, len(graph))) for graph in self.graphs if len(graph)]
        out: list[Found] = []
        for i in range(len(q)):
            rows = np.concatenate([keys[i][: counts[i]] for keys, counts in walks])
            if mask is not None:
                rows = rows[mask[rows]]
            rows = np.unique(rows)  # ascending: the rescoring below is independent of the graph's order
            want = min(depth, allowed)
            if len(rows) < want:  # the walk found too few allowed rows: exact answers this query
                out.extend(self.exact.search(q[i : i + 1], depth, mask))
                continue
            scores = dots(self.vectors[rows], q[i])
            out.append(top_rows(scores, want, rows, self.rank))
        return out

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        return self.exact.vectors_of(rows)

    @staticmethod
    def _walk(graph: Any, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """One graph's keys (rows), one line per query, and how many of each line it found."""
        found = graph.search(q, k)
        keys = np.asarray(found.keys, dtype=np.int64).reshape(len(q), -1)
        return keys, np.asarray(getattr(found, "counts", [keys.shape[1]])).reshape(-1)  # one query: no counts


class ChromaSearch:
    """Chroma's HNSW over the version's collection (answers vary between builds: see the module doc)."""

    kind = "chroma"

    def __init__(self, collection: Any, chunk_ids: list[str], row_of: dict[str, int]) -> None:
        self.collection = collection
        self.chunk_ids = chunk_ids
        self.row_of = row_of
        self._count: int | None = None  # a published version never changes: Chroma's count() once

    def search(self, qvecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[Found]:
        if self._count is None:
            self._count = int(self._call(self.collection.count))
        total = self._count
        empty = [top_rows(np.zeros(0), 0) for _ in range(len(qvecs))]
        if total == 0 or len(qvecs) == 0 or depth <= 0:
            return empty
        kwargs: dict[str, Any] = {}
        if mask is not None:
            allowed = [self.chunk_ids[i] for i in np.flatnonzero(mask)]
            if not allowed:
                return empty
            kwargs["ids"] = allowed
            total = len(allowed)
        res = self._call(self.collection.query, query_embeddings=np.asarray(qvecs, dtype=np.float32),
                         n_results=min(depth, total), include=["distances"], **kwargs)
        try:
            return [(np.fromiter((self.row_of[i] for i in ids), dtype=np.int64, count=len(ids)),
                     1.0 - np.asarray(dists, dtype=np.float64))
                    for ids, dists in zip(res["ids"], res["distances"])]
        except KeyError as exc:
            raise IndexDamagedError(f"Chroma collection {self._name} returned id {exc} that is not in this "
                                    "version's chunks table: `ragrig health` says more, `ragrig ingest` rebuilds "
                                    "it") from None

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        if not len(rows):
            return np.zeros((0, 0), dtype=np.float32)
        ids = [self.chunk_ids[r] for r in np.asarray(rows).tolist()]
        got = self._call(self.collection.get, ids=ids, include=["embeddings"])
        by_id = dict(zip(got["ids"], got["embeddings"]))
        return unit_rows(np.asarray([by_id[i] for i in ids], dtype=np.float32))

    @property
    def _name(self) -> str:
        return str(getattr(self.collection, "name", "?"))

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A call on the collection; Chroma's own errors (its store removed or damaged under this reader: a
        `ragrig reset`, a deleted folder) become one ``IndexDamagedError``."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise IndexDamagedError(
                f"Chroma collection {self._name} failed ({type(exc).__name__}: {str(exc)[:160]}): the index was "
                "removed or damaged under this reader; `ragrig health` says which, `ragrig ingest` rebuilds it"
            ) from None


def open_vector_search(cfg: VectorSearchConfig, version: IndexVersion, rank: np.ndarray) -> VectorSearch:
    """The search that answers vector queries over ``version`` (``index.vectors.search_kind``); ``rank``: each
    row's place in chunk-id order."""
    kind = search_kind(cfg, len(version.chunks), version.has_vectors)
    if kind == "chroma":
        return ChromaSearch(version.collection(), [c.chunk_id for c in version.chunks], version.chunk_index)
    if kind == "exact":
        return ExactSearch(version.vectors, rank)
    return HnswSearch(version.vectors, version.hnsw_graphs(cfg.hnsw), cfg.hnsw.expansion_search, rank)
