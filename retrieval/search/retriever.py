"""The retriever: hybrid retrieval over one published index version, as one batch-first pipeline.

    queries -> process (validate, normalise, expand) -> candidates per source (sources.py's registry: BM25,
            vector, header, section, vector2) -> fuse -> select (min_relevance, de-duplicate, cut) -> rerank
            (optional) -> shape (comparison, adaptive cut, section expansion) -> multi-hop (each hop one batch)
            -> RetrievalResult per query

Every stage works on a batch; ``search`` is a batch of one (plus the query cache). Deterministic: rankings
break ties by (-score, chunk id). Explainable: each hit carries its rank and score in every source (and the
rerank stage), and each result its normalised and expanded query, per-source candidate counts and per-stage
timings.

The stages are functions in sources/candidates/fusion/select/rerank/shaping/calibration and multihop.hops; this
module holds the index they read (chunks, rows, sources, chunk order, de-duplication keys, models) and runs a
batch through them: memo keys, timings, Hits (each built once).
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from ragrig.configs.errors import IndexDamagedError, ModelMismatchError
from ragrig.configs.models import RagrigConfig, RetrievalConfig
from ragrig.retrieval.cache.queries import QueryCache
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.filters import Filters, live
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.chunk_table import ChunkTable
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.views import weighted_views
from ragrig.retrieval.multihop.hops import multi_hop
from ragrig.retrieval.multihop.terms import TermIndex
from ragrig.retrieval.results import Hit, RetrievalResult, SourceScore, log_results
from ragrig.retrieval.search.calibration import Calibration, batch_relevance, index_calibration
from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, ChunkOrder, DedupKeys
from ragrig.retrieval.search.fusion import best_rows, fuse
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.query import QueryProcessor, QueryProcessors, check_depth, processing_key
from ragrig.retrieval.search.rerank import Reranker, widen
from ragrig.retrieval.search.select import Selection, select
from ragrig.retrieval.search.shaping import Sections, entity_rows, shape
from ragrig.retrieval.search.sources import RunKey, Sources, fetch_candidates
from ragrig.retrieval.search.vector_search import open_vector_search
from ragrig.retrieval.search.views import Views
from ragrig.retrieval.vector_check import query_vectors

log = logging.getLogger(__name__)


class Retriever:
    def __init__(self, cfg: RagrigConfig, version: IndexVersion | None = None, embedder: Embedder | None = None) -> None:
        self.cfg = cfg
        self.version = version or IndexVersion.current(cfg)
        memo_file = self.version.layout.cache_dir / "model-digests.json"
        configured = Embedder(cfg.embedding, memo_file=memo_file)
        self.embedder = embedder or configured
        wanted = (self.embedder if self.embedder.cfg == cfg.embedding else configured).id  # what the config asks for
        if self.version.model_id != wanted:
            raise ModelMismatchError(
                f"index {self.version.layout.key}@{self.version.version} was built with embedding model "
                f"'{self.version.model_id}', but the config's model is '{wanted}' (another model, or new files at "
                "the same path); re-ingest, or change embedding.model"
            )
        self.chunks: ChunkTable = self.version.chunks
        self._rows = self.chunks.rows_by_id
        self.headers = self.chunks.derived.headers
        try:
            bm25 = Bm25Index.load(self.version.bm25_dir, cfg.index.bm25, mmap=True)  # postings paged in as read
        except Exception as exc:  # bm25s' own errors on damaged files
            raise self.version.damaged(f"bm25/ is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        if bm25.size != len(self.chunks):
            raise self.version.damaged(f"BM25 has {bm25.size} documents, the chunks table {len(self.chunks)}")
        views = Views(self.chunks, self.embedder, cfg.embedding, self.version.layout.embedding_cache, memo_file)
        self.sources = Sources(bm25, open_vector_search(cfg.index.vector_search, self.version, self.order.rank),
                               self.headers, views, self.query_vectors)
        if cfg.retrieval.fusion.weights.get("vector", 0) > 0:
            _ = self.embedder.model  # load now, so query timings measure queries, not model loading
        self._processors = QueryProcessors(self.version.keywords)
        self.processor = self.processor_for(cfg.retrieval)
        self.cache: QueryCache[RetrievalResult] = QueryCache(cfg.retrieval.cache_size, cfg.retrieval.cache_ttl_s)
        self._masks: dict[Filters, np.ndarray] = {}
        self._rerankers: dict[tuple[str, int], Reranker] = {}
        if cfg.retrieval.rerank.enabled:
            self.reranker(cfg.retrieval)  # load now, so query timings measure queries, not model loading
        t0 = time.perf_counter()  # load what the first query would otherwise pay for
        self.sources.warm(int(self.version.manifest["embedding"]["dim"]) if self.chunks
                          and cfg.retrieval.fusion.weights.get("vector", 0) > 0 else None,
                          [views.of(v, cfg.retrieval) for v in weighted_views(cfg.retrieval)] if self.chunks else [])
        self.load_ms = (time.perf_counter() - t0) * 1000

    @property
    def vector_search(self) -> str:
        """What answers vector queries: ``exact``, ``hnsw`` (approximate, deterministic) or ``chroma``
        (approximate, varies between builds); every report records it."""
        return self.sources.vector_search.kind

    # ---- per index version, made once -------------------------------------------------------------------
    @cached_property
    def order(self) -> ChunkOrder:
        return ChunkOrder.of_rows(self.chunks.derived.order)

    @cached_property
    def dedup(self) -> DedupKeys:
        return DedupKeys.of_codes(self.chunks.derived.codes[:, :2])

    @cached_property
    def terms(self) -> TermIndex:
        return TermIndex(self.version.keywords, self.chunks, stored=self.chunks.derived.terms)

    @cached_property
    def calibration(self) -> Calibration:
        """The index's absolute relevance scale (made on first use: a floor needs it)."""
        return index_calibration(self.chunks, self.query_vectors, self.sources.vectors_of)

    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The embedder's vectors for ``texts``, checked where they are made (``vector_check.query_vectors``)."""
        v = self.version
        return query_vectors(self.embedder, texts, int(v.manifest["embedding"]["dim"]), f"{v.layout.key}@{v.version}")

    @cached_property
    def sections(self) -> Sections:
        return Sections(self.chunks)

    def reranker(self, r: RetrievalConfig) -> Reranker:
        """The rerank stage's cross-encoder for ``r.rerank``, loaded once (its pair scores kept with it)."""
        key = (r.rerank.model, r.rerank.batch_size)
        got = self._rerankers.get(key)
        if got is None:
            from ragrig.retrieval.encoders.cross_encoder import load_cross_encoder

            got = self._rerankers[key] = Reranker(load_cross_encoder(*key, device=self.cfg.embedding.device))
        return got

    def processor_for(self, r: RetrievalConfig) -> QueryProcessor:
        """The query processor for a retrieval config (normalisation, expansion, synonyms), built once."""
        return self._processors.get(r)

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        """Which chunk rows the filters allow (None: all), made once per filter."""
        if filters is None:
            return None
        m = self._masks.get(filters)
        if m is None:
            m = self._masks[filters] = filters.mask(self.chunks)
        return m

    def row_of(self, chunk_id: str) -> int:
        return self._rows[chunk_id]

    # ---- public API -----------------------------------------------------------------------------------------
    def search(self, query: str, *, top_k: int | None = None, filters: Filters | None = None,
               retrieval: RetrievalConfig | None = None, max_hops: int | None = None,
               use_cache: bool = True) -> RetrievalResult:
        """Hybrid retrieval for one query (a batch of one), through the query cache; ``max_hops`` (default:
        retrieval.max_hops) > 0 adds multi-hop."""
        r = retrieval or self.cfg.retrieval
        k = r.top_k if top_k is None else top_k
        hops = r.max_hops if max_hops is None else max_hops
        check_depth([k], [hops], 1)
        memo = CandidateMemo()
        key = None
        if use_cache:
            [pq] = memo.process(self.processor_for(r), processing_key(r), [query], [{}])  # the batch reuses it
            key = (pq.text, pq.bm25_text, self.version.layout.key, self.version.version, k, live(filters),
                   json.dumps(r.model_dump(), sort_keys=True), hops)
            hit = self.cache.get(key)
            if hit is not None:
                return RetrievalResult(**{**hit.__dict__, "cached": True})
        result = self.search_many([query], top_k=k, filters=filters, retrieval=r, max_hops=[hops], memo=memo)[0]
        if key is not None:
            self.cache.put(key, result)
        return result

    def search_many(self, queries: Sequence[str], *, top_k: int | Sequence[int] | None = None,
                    filters: Filters | None = None, retrieval: RetrievalConfig | None = None,
                    max_hops: Sequence[int | None] | None = None, hits: int | None = None,
                    memo: CandidateMemo | None = None) -> list[RetrievalResult]:
        """Many queries as one batch (what evaluation uses). ``top_k``: one for all, or one per query.
        ``hits``: build full Hits for each result's first ``hits`` only (the whole ranking is in
        ``result.ranked`` either way). ``memo``: candidates computed once and reused across calls over this index
        version (sweeps pass one; a fresh one otherwise)."""
        r = retrieval or self.cfg.retrieval
        ks = list(top_k) if isinstance(top_k, Sequence) else [r.top_k if top_k is None else top_k] * len(queries)
        check_depth(ks, max_hops, len(queries))
        if not self.version.dir.is_dir():  # `ragrig reset` under this reader: its mapped vectors would still answer
            raise IndexDamagedError(f"index {self.version.layout.key}@{self.version.version} was removed or damaged "
                                    "under this reader (its folder is gone); `ragrig ingest` rebuilds it")
        memo = memo if memo is not None else CandidateMemo()
        hop_list = [r.max_hops if max_hops is None or max_hops[i] is None else max_hops[i] for i in range(len(queries))]
        # a batch allocates many short-lived objects over a large live heap (chunks, candidate memo): cyclic GC
        # passes cost ~0.4 s per 300 queries on SciFact and find next to nothing, so pause them for the batch
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            return self._search_batch(queries, ks, live(filters), r, hop_list, hits, memo)
        finally:
            if gc_was_on:
                gc.enable()

    # ---- the pipeline ---------------------------------------------------------------------------------------
    def _search_batch(self, queries: Sequence[str], ks: list[int], filters: Filters | None, r: RetrievalConfig,
                      hops: list[int], n_hits: int | None, memo: CandidateMemo) -> list[RetrievalResult]:
        t = [dict[str, float]() for _ in queries]
        processed = memo.process(self.processor_for(r), processing_key(r), queries, t)
        keys = fetch_candidates(self.sources, processed, r, filters, self.mask(filters), memo, t)
        batch = self._batch(keys, memo)
        t0 = time.perf_counter()
        fused = fuse(batch, r.fusion)
        relevance = None
        if r.min_relevance > 0:
            texts = [pq.text for pq in processed]
            relevance = batch_relevance(batch, lambda: memo.query_vectors(None, texts, self.query_vectors),
                                        self.sources.vectors_of, self.calibration)
        limits = [None if pq.comparison else max(k, r.adaptive.max_results if r.adaptive.enabled else 0)
                  for pq, k in zip(processed, ks)]
        sel = select(batch, fused, r, widen(limits, r.rerank), self.dedup, relevance)
        share = (time.perf_counter() - t0) * 1000 / max(1, len(queries))
        if r.rerank.enabled:  # the fused rerank stage (rerank.py): each query's top_n rescored, then cut again
            sel, _, ms = self.reranker(r).apply(sel, batch.rows, [pq.raw for pq in processed], limits, r.rerank,
                                                lambda row: self.chunks[row].search_text)
            for tq in t:
                tq["rerank"] = ms / max(1, len(queries))
        pins = entity_rows(processed, self.headers, r.header_threshold, self.mask(filters),
                           lambda texts: self._top_fused(texts, r, filters, memo))
        out, tails, starts = [], [], batch.bounds()
        for q, pq in enumerate(processed):
            t1 = time.perf_counter()
            shaped = bool(pq.comparison) or r.adaptive.enabled or r.section_expansion_tokens > 0
            elems, scores = sel.of(q)
            rows = batch.rows[elems].tolist()
            # full Hits where shaping or multi-hop reads them: shaping reads every hit, and one hop only the
            # context window (the ranking beyond it follows unchanged); two or more hops may place hop hits
            # past the window, after every hop-0 hit, so they get the whole list
            n = (len(rows) if shaped or hops[q] > 1 or n_hits is None
                 else min(max(n_hits, r.top_k) if hops[q] == 1 else n_hits, len(rows)))
            cs, first = batch.sets[q], int(starts[q])
            hit_list = [self._hit(row, score, cs, e - first, sel, q, None if relevance is None else float(relevance[e]))
                        for row, score, e in zip(rows[:n], scores[:n].tolist(), elems[:n].tolist())]
            if shaped:
                hit_list = shape(hit_list, pins.get(q, []), r, ks[q],
                                 lambda row, cs=cs, q=q: self._hit(row, 0.0, cs, cs.place_of(row, self.order), sel, q),
                                 self.chunks, self._rows, self.sections)
            tails.append((rows[n:], scores[n:].tolist()))
            t[q]["fuse"] = share
            t[q]["shape"] = (time.perf_counter() - t1) * 1000
            t[q]["total"] = sum(t[q].values())
            out.append(RetrievalResult(
                query=pq.raw, normalized=pq.text, bm25_query=pq.bm25_text, expansions=pq.expansions,
                comparison=pq.comparison, hits=hit_list, version=self.version.version, timings_ms=t[q],
                candidates={s: len(memo.runs[key]) for s, key in keys[q].items()}))
        hopping = [q for q in range(len(out)) if hops[q] > 0]
        if hopping:
            tail = [[(self.chunks[row].chunk_id, sc) for row, sc in zip(*tails[q])] for q in hopping]
            for q, res in zip(hopping, multi_hop(self, [out[q] for q in hopping], r, [ks[q] for q in hopping],
                                                 [hops[q] for q in hopping], filters=filters, tails=tail)):
                out[q] = res
        for res, (rest, _) in zip(out, tails):
            seen = {h.chunk_id for h in res.hits}
            res.ranked = [self.chunks[self._rows[h.chunk_id]] for h in res.hits]
            res.ranked += [c for c in (self.chunks[row] for row in rest) if c.chunk_id not in seen]
            if n_hits is not None:
                res.hits = res.hits[:n_hits]
        log_results(log, out, self.version.version, sel.dropped)
        return out

    def _batch(self, keys: list[dict[str, RunKey]], memo: CandidateMemo) -> CandidateBatch:
        """The queries' candidate sets (each run key starts with its source's name), memoised per combination of
        runs, and the batch of them, memoised per combination of sets."""
        set_keys = [tuple(k.values()) for k in keys]
        sets = [memo.get(memo.sets, sk, lambda sk=sk: CandidateSet.build(
            {key[0]: memo.runs[key] for key in sk}, self.order, self.dedup)) for sk in set_keys]
        return memo.get(memo.batches, tuple(set_keys), lambda: CandidateBatch.of(sets))

    def _top_fused(self, texts: list[str], r: RetrievalConfig, filters: Filters | None,
                   memo: CandidateMemo) -> list[int | None]:
        """Each text's best fused candidate row (None: no candidate), the texts as one batch (no selection)."""
        t = [dict[str, float]() for _ in texts]
        processed = memo.process(self.processor_for(r), processing_key(r), texts, t)
        batch = self._batch(fetch_candidates(self.sources, processed, r, filters, self.mask(filters), memo, t), memo)
        return best_rows(batch, fuse(batch, r.fusion))

    def _hit(self, row: int, score: float, cs: CandidateSet, i: int | None, sel: Selection, q: int,
             relevance: float | None = None) -> Hit:
        """Row ``row`` as a Hit: its rank and score in each source (``i``: its place among ``cs``'s candidates,
        None if not one) and in the rerank stage (``sel``, query ``q``)."""
        srcs = {} if i is None else {s: SourceScore(rank, sc) for s, (rank, sc) in cs.sources_of(i).items()}
        reranked = None if sel.rerank is None else sel.rerank[q].get(row)
        if reranked is not None:
            srcs["rerank"] = SourceScore(*reranked)
        return Hit.from_chunk(self.chunks[row], score, srcs, relevance=relevance)
