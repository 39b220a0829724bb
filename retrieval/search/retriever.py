"""The retriever: hybrid retrieval over one published index version, as one batch-first pipeline.

    queries -> process (validate, normalise, expand) -> candidates per source (BM25, vector, header)
            -> fuse -> select (min_relevance, de-duplicate, cut) -> shape (comparison, adaptive cut,
            section expansion) -> multi-hop -> RetrievalResult per query

Every stage works on a batch; ``search`` is a batch of one (plus the query cache). Deterministic: rankings
break ties by (-score, chunk id). Explainable: each hit carries its rank and score in every source, and each
result its normalised and expanded query, per-source candidate counts and per-stage timings.

The stages themselves are functions in sources/candidates/fusion/select/shaping; this module is the facade plus
the batch's orchestration (memo keys, timings, Hits). Why it is ~430 lines and not split further: every method
left reads the index the facade holds (chunks, rows, sources, order, dedup keys) and the batch's memo; moving
them out would pass that state around again as the plumbing arguments the rebuild removed.
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections import defaultdict
from collections.abc import Hashable, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from ragrig.configs.errors import IndexDamagedError, InputError, ModelMismatchError, RagrigError
from ragrig.configs.models import MAX_HOPS_MAX, TOP_K_MAX, RagrigConfig, RetrievalConfig
from ragrig.retrieval.cache.queries import QueryCache
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.multihop.hops import multi_hop
from ragrig.retrieval.multihop.terms import TermIndex
from ragrig.retrieval.results import Hit, RetrievalResult, SourceScore
from ragrig.retrieval.search.calibration import Calibration, calibrate, sample_rows, sample_titles
from ragrig.retrieval.search.candidates import SOURCES, CandidateBatch, CandidateSet, ChunkOrder, DedupKeys
from ragrig.retrieval.search.fusion import fuse
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.query import ProcessedQuery, QueryProcessor, load_synonyms
from ragrig.retrieval.search.rerank import Reranker, widen
from ragrig.retrieval.search.select import dedup_key, select
from ragrig.retrieval.search.shaping import adaptive_cut, expand_sections, pin_entities
from ragrig.retrieval.search.sources import Sources
from ragrig.retrieval.search.vector_search import open_vector_search
from ragrig.retrieval.search.views import VIEWS, ExactView, section_groups
from ragrig.retrieval.vector_check import first_bad_row

log = logging.getLogger(__name__)


class Retriever:
    def __init__(self, cfg: RagrigConfig, version: IndexVersion | None = None, embedder: Embedder | None = None) -> None:
        self.cfg = cfg
        self.version = version or IndexVersion.current(cfg)
        configured = Embedder(cfg.embedding, memo_file=self.version.layout.cache_dir / "model-digests.json")
        self.embedder = embedder or configured
        wanted = (self.embedder if self.embedder.cfg == cfg.embedding else configured).id  # what the config asks for
        if self.version.model_id != wanted:
            raise ModelMismatchError(
                f"index {self.version.layout.key}@{self.version.version} was built with embedding model "
                f"'{self.version.model_id}', but the config's model is '{wanted}' (another model, or new files at "
                "the same path); re-ingest, or change embedding.model"
            )
        self.chunks: list[Chunk] = self.version.chunks
        self._rows = self.version.chunk_index
        self.headers = HeaderIndex(self.chunks)
        try:
            bm25 = Bm25Index.load(self.version.bm25_dir, cfg.index.bm25)
        except Exception as exc:  # bm25s' own errors on damaged files
            raise self.version.damaged(f"bm25/ is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        if bm25.size != len(self.chunks):
            raise self.version.damaged(f"BM25 has {bm25.size} documents, the chunks table {len(self.chunks)}")
        self.sources = Sources(bm25, open_vector_search(cfg.index.vector_search, self.version, self.order.rank),
                               self.headers)
        if cfg.retrieval.fusion.weights.get("vector", 0) > 0:
            _ = self.embedder.model  # load now, so query timings measure queries, not model loading
        self._processors: dict[tuple[Any, ...], QueryProcessor] = {}
        self.processor = self.processor_for(cfg.retrieval)
        self.cache: QueryCache[RetrievalResult] = QueryCache(cfg.retrieval.cache_size, cfg.retrieval.cache_ttl_s)
        self._masks: dict[Filters, np.ndarray] = {}
        self._rerankers: dict[tuple[str, int], Reranker] = {}
        self._second_views: dict[str, ExactView] = {}
        if cfg.retrieval.rerank.enabled:
            self.reranker(cfg.retrieval)  # load now, so query timings measure queries, not model loading
        self.load_ms = self._warm()

    @property
    def vector_search(self) -> str:
        """What answers vector queries: ``exact``, ``hnsw`` (approximate, deterministic) or ``chroma``
        (approximate, varies between builds); every report records it."""
        return self.sources.vector_search.kind

    # ---- per index version, made once -------------------------------------------------------------------
    @cached_property
    def order(self) -> ChunkOrder:
        return ChunkOrder.of([c.chunk_id for c in self.chunks])

    @cached_property
    def dedup(self) -> DedupKeys:
        return DedupKeys.build([dedup_key(c) for c in self.chunks])

    @cached_property
    def terms(self) -> TermIndex:
        return TermIndex(self.version.keywords, self.chunks)

    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The embedder's vectors for ``texts``, each checked where it is made: as wide as this version's
        vectors, finite, not zero. A model that answers otherwise (an endpoint answering NaN, or serving another
        model under the same name) is one error naming it and what was wrong, never a ranking."""
        vecs = np.asarray(self.embedder.encode_queries(texts))
        dim = int(self.version.manifest["embedding"]["dim"])
        bad = first_bad_row(vecs, dim, normalized=False)
        if bad is None:
            return vecs
        v = self.version
        if vecs.ndim == 2 and vecs.shape[1] != dim:
            raise RagrigError(f"embedding model {self.embedder.id} answers {vecs.shape[1]}-wide query vectors, but "
                              f"index {v.layout.key}@{v.version} holds {dim}-wide ones: re-ingest (`ragrig ingest`)")
        raise RagrigError(f"embedding model {self.embedder.id} gave an unusable vector for the query "
                          f"{texts[bad[0]][:80]!r} ({bad[1]}): no ranking without it")

    @cached_property
    def calibration(self) -> Calibration:
        """The index's absolute relevance scale (made on first use: a floor needs it)."""
        titles = sample_titles(self.chunks)
        rows = sample_rows(len(self.chunks))
        vecs = self.query_vectors([t for t, _ in titles]) if titles else np.zeros((0, 0))
        return calibrate([d for _, d in titles], _unit(vecs), [self.chunks[r].doc_id for r in rows.tolist()],
                         _unit(self.sources.vectors_of(rows)))

    @cached_property
    def _by_doc(self) -> dict[str, list[Chunk]]:
        out: dict[str, list[Chunk]] = defaultdict(list)
        for c in self.chunks:
            out[c.doc_id].append(c)
        return out

    def own_section(self, c: Chunk) -> list[Chunk]:
        """The chunks of ``c``'s own section, in document order: its other pieces and its subsections (none for
        text before a document's first header)."""
        n = len(c.header_path)
        if not n or c.level == 0:
            return []
        return [x for x in self._by_doc[c.doc_id] if x.level >= c.level and x.header_path[:n] == c.header_path]

    def _warm(self) -> float:
        """Load what the first query would otherwise pay for (the vectors' pages or Chroma's HNSW segment, BM25
        matrices)."""
        t0 = time.perf_counter()
        if self.chunks and self.cfg.retrieval.fusion.weights.get("vector", 0) > 0:
            dim = int(self.version.manifest["embedding"]["dim"])
            self.sources.vectors(np.ones((1, dim), dtype=np.float32) / np.sqrt(dim), 1, None)
        self.sources.bm25_index.scores(["warm"])
        return (time.perf_counter() - t0) * 1000

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
        key = _processing(r)
        proc = self._processors.get(key)
        if proc is None:
            proc = self._processors[key] = QueryProcessor(
                self.version.keywords, load_synonyms(r.synonyms), normalise=r.normalise, expansion=r.expansion,
                max_chars=r.max_query_chars)
        return proc

    # ---- what multi-hop needs (multihop.hops.HopIndex) ----------------------------------------------------
    def row_of(self, chunk_id: str) -> int:
        return self._rows[chunk_id]

    def header_rows(self, name: str, threshold: float) -> list[int]:
        return [row for m in self.headers.lookup(name, threshold) for row in m.rows]

    def header_titles(self, query: str, threshold: float, limit: int) -> list[str]:
        return [m.title for m in self.headers.mentions(query, threshold, limit=limit)]

    # ---- public API -----------------------------------------------------------------------------------------
    def search(self, query: str, *, top_k: int | None = None, filters: Filters | None = None,
               retrieval: RetrievalConfig | None = None, max_hops: int | None = None,
               use_cache: bool = True) -> RetrievalResult:
        """Hybrid retrieval for one query (a batch of one), through the query cache; ``max_hops`` (default:
        retrieval.max_hops) > 0 adds multi-hop."""
        r = retrieval or self.cfg.retrieval
        k = r.top_k if top_k is None else top_k
        hops = r.max_hops if max_hops is None else max_hops
        _check_depth(k, [hops])
        memo = CandidateMemo()
        key = None
        if use_cache:
            pq = memo.processed[(_processing(r), query)] = self.processor_for(r).process(query)
            key = (pq.text, pq.bm25_text, self.version.layout.key, self.version.version, k, _live(filters),
                   json.dumps(r.model_dump(), sort_keys=True), hops)
            hit = self.cache.get(key)
            if hit is not None:
                return RetrievalResult(**{**hit.__dict__, "cached": True})
        result = self.search_many([query], top_k=k, filters=filters, retrieval=r, max_hops=[hops], memo=memo)[0]
        if key is not None:
            self.cache.put(key, result)
        return result

    def search_many(self, queries: Sequence[str], *, top_k: int | None = None, filters: Filters | None = None,
                    retrieval: RetrievalConfig | None = None, max_hops: Sequence[int | None] | None = None,
                    hits: int | None = None, memo: CandidateMemo | None = None) -> list[RetrievalResult]:
        """Many queries as one batch (what evaluation uses). ``hits``: build full Hits for each result's first
        ``hits`` only (the whole ranking is in ``result.ranked`` either way). ``memo``: candidates computed
        once and reused across calls over this index version (sweeps pass one; a fresh one otherwise)."""
        r = retrieval or self.cfg.retrieval
        k = r.top_k if top_k is None else top_k
        _check_depth(k, max_hops)
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
            return self._search_batch(queries, k, _live(filters), r, hop_list, hits, memo)
        finally:
            if gc_was_on:
                gc.enable()

    # ---- the pipeline ---------------------------------------------------------------------------------------
    def _search_batch(self, queries: Sequence[str], k: int, filters: Filters | None, r: RetrievalConfig,
                      hops: list[int], n_hits: int | None, memo: CandidateMemo) -> list[RetrievalResult]:
        t = [dict[str, float]() for _ in queries]
        processed = self._process(queries, r, memo, t)
        keys = self._candidates(processed, r, filters, memo, t)
        batch = self._batch(keys, memo)
        t0 = time.perf_counter()
        fused = fuse(batch, r.fusion)
        shaped = [bool(pq.comparison) or r.adaptive.enabled or r.section_expansion_tokens > 0 for pq in processed]
        enough = max(k, r.adaptive.max_results if r.adaptive.enabled else 0)
        relevance = self._relevance(batch, processed, memo) if r.min_relevance > 0 else None
        limits = [None if pq.comparison else enough for pq in processed]
        sel = select(batch, fused, r, widen(limits, r.rerank), self.dedup, relevance)
        share = (time.perf_counter() - t0) * 1000 / max(1, len(queries))
        reranked = None
        if r.rerank.enabled:  # the fused rerank stage (rerank.py): each query's top_n rescored, then cut again
            sel, reranked, ms = self.reranker(r).apply(sel, batch.rows, [pq.raw for pq in processed], limits,
                                                       r.rerank, lambda row: self.chunks[row].search_text)
            for q in range(len(queries)):
                t[q]["rerank"] = ms / max(1, len(queries))
        pins = self._entity_rows(processed, r, filters, memo)
        starts = batch.bounds()
        out = []
        for q, pq in enumerate(processed):
            t1 = time.perf_counter()
            cs, first = batch.sets[q], int(starts[q])
            elems, scores = sel.of(q)
            rows = batch.rows[elems].tolist()
            # full Hits where shaping or multi-hop reads them: shaping reads every hit, and one hop only the
            # context window (the ranking beyond it follows unchanged: see _after_one_hop); two or more hops
            # may place hop hits past the window, after every hop-0 hit, so they get the whole list
            n = (len(rows) if shaped[q] or hops[q] > 1 or n_hits is None
                 else min(max(n_hits, r.top_k) if hops[q] == 1 else n_hits, len(rows)))
            hit_list = [self._hit(row, score, cs, e - first, None if relevance is None else float(relevance[e]))
                        for row, score, e in zip(rows[:n], scores[:n].tolist(), elems[:n].tolist())]
            if reranked is not None:
                for h in hit_list:
                    got = reranked[q].get(self._rows[h.chunk_id])
                    if got is not None:
                        h.sources["rerank"] = SourceScore(*got)
            if shaped[q]:
                hit_list = self._shape(hit_list, pins.get(q, []), cs, r, k)
                ranked = [self.chunks[self._rows[h.chunk_id]] for h in hit_list]
            else:
                ranked = [self.chunks[row] for row in rows]
            t[q]["fuse"] = share
            t[q]["shape"] = (time.perf_counter() - t1) * 1000
            t[q]["total"] = sum(t[q].values())
            res = RetrievalResult(query=pq.raw, normalized=pq.text, bm25_query=pq.bm25_text, expansions=pq.expansions,
                                  comparison=pq.comparison, hits=hit_list, version=self.version.version,
                                  timings_ms=t[q], candidates={s: len(memo.runs[key]) for s, key in keys[q].items()},
                                  ranked=ranked)
            if hops[q] > 0:
                res = multi_hop(self, res, r, k, hops[q], filters=filters)
                res.ranked = [self.chunks[self._rows[h.chunk_id]] for h in res.hits]
                if n < len(rows):
                    self._after_one_hop(res, rows, scores, n)
            if n_hits is not None:
                res.hits = res.hits[:n_hits]
            if log.isEnabledFor(logging.DEBUG):
                log.debug("query %r: %d hits", pq.text[:80], len(res.ranked), extra={"ragrig": {
                    "event": "retrieval.query", "version": self.version.version, "candidates": res.candidates,
                    "deduplicated": int(sel.dropped[q]), "hits": len(res.ranked), "hops": len(res.hops),
                    "timings_ms": {name: round(v, 3) for name, v in res.timings_ms.items()}}})
            out.append(res)
        return out

    def _after_one_hop(self, res: RetrievalResult, rows: list[int], scores: np.ndarray, n: int) -> None:
        """A one-hop result whose Hits were built for the first ``n`` of its hop-0 ``rows`` only: the rest of the
        ranking follows, less any chunk the hop promoted, and a hop hit's score is the lowest score of the hop-0
        hits left in the whole ranking, as when every hit is built. Equal to the full build (a test compares
        them); it saves building ~90 Hits per query in an evaluation at depth 100."""
        hopped = {h.chunk_id for h in res.hits if h.hop}
        if hopped:
            floor = min((sc for row, sc in zip(rows, scores.tolist()) if self.chunks[row].chunk_id not in hopped),
                        default=0.0)
            for h in res.hits:
                if h.hop:
                    h.score = min(h.score, floor)
        seen = {h.chunk_id for h in res.hits}
        res.ranked += [c for c in (self.chunks[row] for row in rows[n:]) if c.chunk_id not in seen]

    def _process(self, queries: Sequence[str], r: RetrievalConfig, memo: CandidateMemo,
                 t: list[dict[str, float]]) -> list[ProcessedQuery]:
        proc, key = self.processor_for(r), _processing(r)
        out = []
        for q, text in enumerate(queries):
            t0 = time.perf_counter()
            out.append(memo.get(memo.processed, (key, text), lambda: proc.process(text)))
            t[q]["process"] = (time.perf_counter() - t0) * 1000
        return out

    def _active(self, r: RetrievalConfig) -> list[str]:
        return [s for s in SOURCES if r.fusion.weights.get(s, 0.0) > 0]

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        """Which chunk rows the filters allow (None: all), made once per filter."""
        if filters is None:
            return None
        m = self._masks.get(filters)
        if m is None:
            m = self._masks[filters] = filters.mask(self.chunks)
        return m

    def _candidates(self, processed: list[ProcessedQuery], r: RetrievalConfig, filters: Filters | None,
                    memo: CandidateMemo, t: list[dict[str, float]]) -> list[dict[str, Hashable]]:
        """Each active source's candidates per query, into ``memo.runs`` (unless already there); returns their
        keys. Vector candidates of every query come from one encode call and one Chroma query."""
        active, mask, depth = self._active(r), self.mask(filters), r.candidates
        keys: list[dict[str, Hashable]] = []
        for pq in processed:
            keys.append({s: (s, pq.bm25_text, depth, filters) if s == "bm25" else
                         (s, pq.text, depth, filters) if s in ("vector", "section") else
                         (s, pq.text, depth, filters, r.views.second_model) if s == "vector2" else
                         (s, pq.text, depth, r.header_threshold, filters) for s in active})
        self._view_candidates(keys, r, mask, depth, memo, t)  # views.py: section and vector2 (when weighted)
        if "vector" in active:
            todo = list(dict.fromkeys(key["vector"] for key in keys if key["vector"] not in memo.runs))
            t0 = time.perf_counter()
            fresh = list(dict.fromkeys(key[1] for key in todo if key[1] not in memo.vectors))
            if fresh:
                memo.vectors.update(zip(fresh, self.query_vectors(fresh)))
            embed = (time.perf_counter() - t0) * 1000 / max(1, len(processed))
            t0 = time.perf_counter()
            if todo:
                memo.runs.update(zip(todo, self.sources.vectors(np.vstack([memo.vectors[key[1]] for key in todo]),
                                                                depth, mask)))
            vector = (time.perf_counter() - t0) * 1000 / max(1, len(processed))
            for q in range(len(processed)):
                t[q]["embed"], t[q]["vector"] = embed, vector
        for q, pq in enumerate(processed):
            for s, key in keys[q].items():
                if s == "vector" or s in VIEWS:
                    continue
                t0 = time.perf_counter()
                if key not in memo.runs:
                    memo.runs[key] = (self.sources.bm25(pq.bm25_text, depth, mask) if s == "bm25"
                                      else self.sources.header(pq.text, depth, mask, r.header_threshold))
                t[q][s] = (time.perf_counter() - t0) * 1000
        return keys

    # ---- more views (views.py): whole-section vectors and a second encoder, as fused sources -------------
    @cached_property
    def section_view(self) -> ExactView:
        texts, groups = section_groups(self.chunks)
        return ExactView(texts, groups, self.embedder, self.version.layout.embedding_cache)

    def second_view(self, model: str) -> ExactView:
        views = self._second_views
        if model not in views:
            second = Embedder(self.cfg.embedding.model_copy(update={"model": model, "query_prefix": None,
                                                                    "document_prefix": "", "backend": "auto"}),
                              memo_file=self.version.layout.cache_dir / "model-digests.json")
            views[model] = ExactView([c.search_text for c in self.chunks], [[i] for i in range(len(self.chunks))],
                                     second, self.version.layout.embedding_cache)
        return views[model]

    def _view_candidates(self, keys: list[dict[str, Hashable]], r: RetrievalConfig, mask: np.ndarray | None,
                         depth: int, memo: CandidateMemo, t: list[dict[str, float]]) -> None:
        for s in VIEWS:
            todo = list(dict.fromkeys(k[s] for k in keys if s in k and k[s] not in memo.runs))
            if not any(s in k for k in keys):
                continue
            t0 = time.perf_counter()
            if todo:
                texts = [key[1] for key in todo]
                if s == "section":
                    fresh = list(dict.fromkeys(x for x in texts if x not in memo.vectors))
                    if fresh:
                        memo.vectors.update(zip(fresh, self.query_vectors(fresh)))
                    view, qvecs = self.section_view, np.vstack([memo.vectors[x] for x in texts])
                else:
                    view = self.second_view(str(r.views.second_model))
                    qvecs = view.query_vectors(texts)
                memo.runs.update(zip(todo, view.search(qvecs, depth, mask)))
            ms = (time.perf_counter() - t0) * 1000 / max(1, len(keys))
            for q in range(len(keys)):
                t[q][s] = ms

    def _batch(self, keys: list[dict[str, Hashable]], memo: CandidateMemo) -> CandidateBatch:
        """The queries' candidate sets (each run key starts with its source's name), memoised per combination of
        runs, and the batch of them, memoised per combination of sets."""
        set_keys = [tuple(k.values()) for k in keys]
        sets = [memo.get(memo.sets, sk, lambda sk=sk: CandidateSet.build(
            {key[0]: memo.runs[key] for key in sk}, self.order, self.dedup)) for sk in set_keys]
        return memo.get(memo.batches, tuple(set_keys), lambda: CandidateBatch.of(sets))

    def _hit(self, row: int, score: float, cs: CandidateSet, i: int | None, relevance: float | None = None) -> Hit:
        """Row ``row`` as a Hit; ``i``: its place among ``cs``'s candidates (per-source ranks), None if not one."""
        srcs = {} if i is None else {s: SourceScore(rank, sc) for s, (rank, sc) in cs.sources_of(i).items()}
        return Hit.from_chunk(self.chunks[row], score, srcs, relevance=relevance)

    def _relevance(self, batch: CandidateBatch, processed: list[ProcessedQuery], memo: CandidateMemo) -> np.ndarray:
        """Each batch element's calibrated relevance: its query-chunk similarity (the vector source's score where
        it returned the chunk, else from the stored vectors) on the index's calibrated scale."""
        sims = np.full(len(batch.rows), np.nan)
        if "vector" in batch.rank:
            has = batch.rank["vector"] > 0
            sims[has] = np.concatenate([c.score["vector"] if "vector" in c.runs else np.zeros(len(c))
                                        for c in batch.sets])[has]
        missing = np.nonzero(np.isnan(sims))[0]
        if len(missing):
            texts = [pq.text for pq in processed]
            fresh = list(dict.fromkeys(t for t in texts if t not in memo.vectors))
            if fresh:
                memo.vectors.update(zip(fresh, self.query_vectors(fresh)))
            rows = np.unique(batch.rows[missing])
            chunk_vecs = dict(zip(rows.tolist(), _unit(self.sources.vectors_of(rows))))
            qvecs = _unit(np.vstack([memo.vectors[t] for t in texts]))
            for e in missing.tolist():
                sims[e] = float(qvecs[batch.seg[e]] @ chunk_vecs[int(batch.rows[e])])
        return self.calibration.relevance(sims)

    def _shape(self, hits: list[Hit], pins: list[tuple[str, int]], cs: CandidateSet, r: RetrievalConfig,
               k: int) -> list[Hit]:
        if pins:
            by_id = {h.chunk_id: h for h in hits}
            made: dict[int, Hit] = {}
            pinned = []
            for entity, row in pins:
                h = by_id.get(self.chunks[row].chunk_id)
                if h is None:
                    h = made.get(row) or made.setdefault(row, self._hit(row, 0.0, cs, self._local(cs, row)))
                pinned.append((entity, h))
            hits = pin_entities(hits, pinned, k)
        hits = hits[:k]
        if r.adaptive.enabled:
            hits = adaptive_cut(hits, r.adaptive.min_results, min(r.adaptive.max_results, k), r.adaptive.gap)
        if r.section_expansion_tokens > 0:
            hits = expand_sections(hits, r.section_expansion_tokens, lambda cid: self.chunks[self._rows[cid]],
                                   self.own_section)
        return hits

    def _local(self, cs: CandidateSet, row: int) -> int | None:
        """Where ``row`` sits among the candidates of ``cs`` (None: not a candidate)."""
        ids = self.order.rank[cs.rows]
        i = int(np.searchsorted(ids, self.order.rank[row]))
        return i if i < len(ids) and ids[i] == self.order.rank[row] else None

    def _entity_rows(self, processed: list[ProcessedQuery], r: RetrievalConfig, filters: Filters | None,
                     memo: CandidateMemo) -> dict[int, list[tuple[str, int]]]:
        """For each comparison query, the best chunk of each entity it compares: a header match first, else the
        top fused candidate for the entity's name alone (all such sub-queries of the batch as one batch)."""
        mask = self.mask(filters)
        found: dict[int, list[tuple[str, int | None]]] = {}
        subs: list[str] = []
        for q, pq in enumerate(processed):
            for entity in pq.comparison or []:
                row = next((x for m in self.headers.lookup(entity, r.header_threshold) for x in m.rows
                            if mask is None or mask[x]), None)
                found.setdefault(q, []).append((entity, row))
                if row is None:
                    subs.append(entity)
        if subs:
            t = [dict[str, float]() for _ in subs]
            sub_pq = self._process(subs, r, memo, t)
            batch = self._batch(self._candidates(sub_pq, r, filters, memo, t), memo)
            fused = fuse(batch, r.fusion)
            tops = [int(batch.rows[fused.order[lo]]) if hi > lo else None
                    for lo, hi in zip(fused.bounds[:-1].tolist(), fused.bounds[1:].tolist())]
            j = 0
            for pairs in found.values():  # subs were collected in this order
                for i, (entity, row) in enumerate(pairs):
                    if row is None:
                        pairs[i] = (entity, tops[j])
                        j += 1
        return {q: [(e, row) for e, row in pairs if row is not None] for q, pairs in found.items()}


def _live(filters: Filters | None) -> Filters | None:
    return None if filters is None or filters.empty else filters


def _processing(r: RetrievalConfig) -> tuple[Any, ...]:
    """The retrieval settings query processing depends on."""
    return (r.normalise, r.expansion, r.synonyms, r.max_query_chars)


def _unit(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float64)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12) if vecs.size else vecs


def _check_depth(top_k: int, max_hops: Sequence[int | None] | None) -> None:
    """top_k and max_hops within the config schema's bounds, or an InputError saying which value is wrong."""
    if not isinstance(top_k, int) or not 1 <= top_k <= TOP_K_MAX:
        raise InputError(f"top_k must be an integer from 1 to {TOP_K_MAX} (got {top_k!r})")
    for h in max_hops or []:
        if h is not None and (not isinstance(h, int) or not 0 <= h <= MAX_HOPS_MAX):
            raise InputError(f"max_hops must be an integer from 0 to {MAX_HOPS_MAX} (got {h!r})")
