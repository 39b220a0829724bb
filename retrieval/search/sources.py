"""The retrieval sources as one registry (the way ``fusion.py`` keeps its methods): each source is one entry
saying which text of a processed query it reads, which retrieval setting its candidates also depend on, and how
it fetches the candidates of a batch of texts as one ``SourceRun`` each.

    bm25     BM25 over the chunks' search text (the query with its synonym expansions)
    vector   the index's own vectors (``vector_search.py``: exact, a seeded HNSW, or Chroma), one call a batch
    header   sections whose header the query names (fuzzy, ``retrieval.header_threshold``)
    section  whole-section vectors, each chunk scored as its section (``views.py``)
    vector2  a second model's vectors of every chunk (``views.py``, ``retrieval.views.second_model``)

The names and their order are ``configs.sources.SOURCE_NAMES`` (fused scores add the sources' terms in that
order); the config validator, the candidates and the renderers read that tuple, and this module refuses to
load if its entries name other sources. A query's run of one source is memoised under the key
``(source, text, depth, filters, setting)``. Adding a source: an entry here and its name in ``SOURCE_NAMES``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from ragrig.configs.models import RetrievalConfig
from ragrig.configs.sources import SOURCE_NAMES
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.search.candidates import SourceRun
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.query import ProcessedQuery
from ragrig.retrieval.search.vector_search import VectorSearch
from ragrig.retrieval.search.views import ExactView, Views

RunKey = tuple[str, str, int, Filters | None, Hashable]  # (source, text, depth, filters, setting)


class Sources:
    """What the sources search over one index version: BM25, the vectors, the header index and the views."""

    def __init__(self, bm25: Bm25Index, vectors: VectorSearch, headers: HeaderIndex, views: Views,
                 encode: Callable[[list[str]], np.ndarray]) -> None:
        self.encode = encode  # the index model's checked query vectors
        self.bm25_index = bm25
        self.vector_search = vectors
        self.headers = headers
        self.views = views

    def warm(self, dim: int | None, views: Sequence[ExactView] = ()) -> None:
        """Load what a first query would otherwise pay for: BM25's matrices and, given the vectors' width,
        their pages (or Chroma's HNSW segment); the fused ``views``' vectors (from the embedding cache) and
        their encoders."""
        if dim:
            self.vectors(np.ones((1, dim), dtype=np.float32) / np.sqrt(dim), 1, None)
        self.bm25_index.scores(["warm"])
        for view in views:
            _ = view.matrix
            view.embedder.encode_queries(["warm"])

    def bm25(self, text: str, depth: int, mask: np.ndarray | None) -> SourceRun:
        """The top ``depth`` chunks by BM25 over their search text, ties by row."""
        return SourceRun.of(self.bm25_index.search(self.bm25_index.tokenizer(text), depth, mask))

    def vectors(self, vecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[SourceRun]:
        """The nearest ``depth`` chunks to each query vector (cosine similarity), for the whole batch at once."""
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


Fetch = Callable[[Sources, list[str], int, "np.ndarray | None", Hashable, CandidateMemo], list[SourceRun]]


@dataclass(frozen=True)
class Source:
    text: Callable[[ProcessedQuery], str]  # what the source reads of a processed query
    setting: Callable[[RetrievalConfig], Hashable]  # the retrieval setting its candidates depend on (or None)
    fetch: Fetch  # (sources, texts, depth, mask, setting, memo) -> one run per text


def _text(pq: ProcessedQuery) -> str:
    return pq.text


def _none(r: RetrievalConfig) -> None:
    return None


def _bm25(src: Sources, texts: list[str], depth: int, mask: np.ndarray | None, _: Hashable,
          memo: CandidateMemo) -> list[SourceRun]:
    return [src.bm25(t, depth, mask) for t in texts]


def _vector(src: Sources, texts: list[str], depth: int, mask: np.ndarray | None, _: Hashable,
            memo: CandidateMemo) -> list[SourceRun]:
    return src.vectors(memo.query_vectors(None, texts, src.encode), depth, mask)


def _header(src: Sources, texts: list[str], depth: int, mask: np.ndarray | None, threshold: Hashable,
            memo: CandidateMemo) -> list[SourceRun]:
    return [src.header(t, depth, mask, float(threshold)) for t in texts]  # type: ignore[arg-type]


def _section(src: Sources, texts: list[str], depth: int, mask: np.ndarray | None, _: Hashable,
             memo: CandidateMemo) -> list[SourceRun]:
    return src.views.section.search(memo.query_vectors(None, texts, src.encode), depth, mask)


def _second(r: RetrievalConfig) -> tuple[str | None, str]:
    return r.views.second_model, r.views.second_backend


def _vector2(src: Sources, texts: list[str], depth: int, mask: np.ndarray | None, setting: Hashable,
             memo: CandidateMemo) -> list[SourceRun]:
    model, backend = setting  # type: ignore[misc]
    view = src.views.second(str(model), str(backend))
    return view.search(memo.query_vectors(f"{model}\0{backend}", texts, view.embedder.encode_queries), depth, mask)


SOURCES: dict[str, Source] = {
    "bm25": Source(lambda pq: pq.bm25_text, _none, _bm25),
    "vector": Source(_text, _none, _vector),
    "header": Source(_text, lambda r: r.header_threshold, _header),
    "section": Source(_text, _none, _section),
    "vector2": Source(_text, _second, _vector2),
}
if tuple(SOURCES) != SOURCE_NAMES:  # a source added in one place only
    raise ImportError(f"retrieval sources {tuple(SOURCES)} != configs.sources.SOURCE_NAMES {SOURCE_NAMES}")


def active(r: RetrievalConfig) -> list[str]:
    """The sources ``r`` weights, in registry order."""
    return [s for s in SOURCES if r.fusion.weights.get(s, 0.0) > 0]


def fetch_candidates(src: Sources, processed: list[ProcessedQuery], r: RetrievalConfig, filters: Filters | None,
                     mask: np.ndarray | None, memo: CandidateMemo,
                     t: list[dict[str, float]]) -> list[dict[str, RunKey]]:
    """Each query's run key per active source, with every run not already in ``memo.runs`` fetched: one fetch
    per source for the whole batch. Timings per query: each source's share, and ``embed`` (query encoding)."""
    names, depth, n = active(r), r.candidates, max(1, len(processed))
    keys = [{s: (s, SOURCES[s].text(pq), depth, filters, SOURCES[s].setting(r)) for s in names} for pq in processed]
    embed0 = memo.embed_ms
    for s in names:
        todo = list(dict.fromkeys(k[s] for k in keys if k[s] not in memo.runs))
        t0, e0 = time.perf_counter(), memo.embed_ms
        if todo:
            memo.runs.update(zip(todo, SOURCES[s].fetch(src, [k[1] for k in todo], depth, mask, todo[0][4], memo)))
        ms = ((time.perf_counter() - t0) * 1000 - (memo.embed_ms - e0)) / n
        for tq in t:
            tq[s] = ms
    if memo.embed_ms > embed0:
        for tq in t:
            tq["embed"] = (memo.embed_ms - embed0) / n
    return keys
