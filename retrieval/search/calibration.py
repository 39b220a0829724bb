"""An absolute relevance scale for one index: how similar a query and a chunk are, compared with how similar
unrelated query-like texts and chunks of this corpus usually are.

Fused scores are relative (the best hit of any query scores 1.0), so they cannot say "nothing here is
relevant". The embedding similarity can, once it is calibrated for the model and the corpus: the background is
the similarity between pseudo-queries (the corpus's own section titles, encoded as queries) and chunks of *other*
documents, a sample of pairs that are, nearly all, unrelated. A hit's relevance is the share of background pairs
its similarity beats (0..1): 0.5 is a typical unrelated pair, 0.99 beats 99 of 100 of them.
``retrieval.min_relevance`` is a floor on that scale (0 disables it).

The sample is deterministic (evenly spaced over the index), so the same version always calibrates the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.index.vectors import unit_rows

if TYPE_CHECKING:
    from ragrig.retrieval.search.candidates import CandidateBatch

Vectors = Callable[[np.ndarray], np.ndarray]  # chunk rows -> their stored vectors

MAX_TITLES = 200
MAX_CHUNKS = 2000


@dataclass(frozen=True)
class Calibration:
    background: np.ndarray  # sorted similarities of unrelated (pseudo-query, chunk) pairs

    def relevance(self, similarity: np.ndarray) -> np.ndarray:
        """The share of background pairs each similarity beats (ties count half)."""
        if not len(self.background):
            return np.ones(len(similarity))
        lo = np.searchsorted(self.background, similarity, side="left")
        hi = np.searchsorted(self.background, similarity, side="right")
        return (lo + hi) / (2.0 * len(self.background))


def sample_titles(chunks: Sequence[Chunk]) -> list[tuple[str, str]]:
    """(title text, its document) for up to MAX_TITLES distinct section titles, evenly spaced over the corpus."""
    seen: dict[str, str] = {}
    for c in chunks:
        if c.header_path:
            seen.setdefault(" ".join(c.header_path[-2:]), c.doc_id)
    titles = sorted(seen.items())
    step = max(1, len(titles) // MAX_TITLES)
    return titles[::step][:MAX_TITLES]


def sample_rows(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, num=min(n, MAX_CHUNKS)).astype(np.int64)) if n else np.zeros(0, np.int64)


def calibrate(title_docs: Sequence[str], title_vecs: np.ndarray, chunk_docs: Sequence[str],
              chunk_vecs: np.ndarray) -> Calibration:
    """The background from encoded pseudo-queries and a sample of chunk vectors (both L2-normalised); pairs from
    the same document are left out (a title and its own text are related)."""
    if not len(title_vecs) or not len(chunk_vecs):
        return Calibration(np.zeros(0))
    sims = np.asarray(title_vecs, dtype=np.float64) @ np.asarray(chunk_vecs, dtype=np.float64).T
    other = np.asarray(title_docs)[:, None] != np.asarray(chunk_docs)[None, :]
    return Calibration(np.sort(sims[other]))


def index_calibration(chunks: Sequence[Chunk], encode: Callable[[list[str]], np.ndarray],
                      vectors_of: Vectors) -> Calibration:
    """An index's calibration: its sampled section titles encoded as queries against its sampled chunks."""
    titles = sample_titles(chunks)
    rows = sample_rows(len(chunks))
    vecs = encode([t for t, _ in titles]) if titles else np.zeros((0, 0))
    return calibrate([d for _, d in titles], unit_rows(vecs, np.float64), [chunks[r].doc_id for r in rows.tolist()],
                     unit_rows(vectors_of(rows), np.float64))


def batch_relevance(batch: CandidateBatch, query_vectors: Callable[[], np.ndarray], vectors_of: Vectors,
                    cal: Calibration) -> np.ndarray:
    """Each batch element's calibrated relevance: its query-chunk similarity (the vector source's score where
    it returned the chunk, else from the stored vectors and ``query_vectors()``, one per query of the batch)."""
    sims = np.full(len(batch.rows), np.nan)
    if "vector" in batch.rank:
        has = batch.rank["vector"] > 0
        sims[has] = np.concatenate([c.score["vector"] if "vector" in c.runs else np.zeros(len(c))
                                    for c in batch.sets])[has]
    missing = np.nonzero(np.isnan(sims))[0]
    if len(missing):
        rows = np.unique(batch.rows[missing])
        chunk_vecs = dict(zip(rows.tolist(), unit_rows(vectors_of(rows), np.float64)))
        qvecs = unit_rows(query_vectors(), np.float64)
        for e in missing.tolist():
            sims[e] = float(qvecs[batch.seg[e]] @ chunk_vecs[int(batch.rows[e])])
    return cal.relevance(sims)
