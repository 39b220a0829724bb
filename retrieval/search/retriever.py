"""Hybrid retrieval over one published index version: BM25 + vector (+ header lookup) -> fusion -> shaping.

Deterministic: every ranking breaks ties by (-score, chunk id). Explainable: each hit
carries its rank and score in every source, and the result carries the normalised and
expanded query, per-source candidate counts and per-stage timings.
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from ragrig.configs.errors import ModelMismatchError
from ragrig.configs.models import RagrigConfig, RetrievalConfig
from ragrig.retrieval.cache.queries import QueryCache
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.embedding import Embedder, model_id
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.results import Hit, RetrievalResult, SourceScore
from ragrig.retrieval.search.batch import FlatCandidates, flatten, fuse_select
from ragrig.retrieval.search.filters import Filters
from ragrig.retrieval.search.fusion import NORMALIZERS, fuse, max_score, minmax, rrf_from_ranks
from ragrig.retrieval.search.query import ProcessedQuery, QueryProcessor, load_synonyms
from ragrig.retrieval.search.shaping import adaptive_cut, dedup_first_of_group, dedup_key, dedup_walk

if TYPE_CHECKING:
    from ragrig.retrieval.multihop.hops import TermIndex

log = logging.getLogger(__name__)

Runs = dict[str, dict[str, float]]


@dataclass
class _Candidates:
    """One query's memoised candidates as arrays (sweeps): ids in id order, their rows, per-source ranks
    (0 where absent) and presence, which may need de-duplication, and normalised scores per method."""

    ids: list[str]
    rows: np.ndarray
    ranks: dict[str, tuple[np.ndarray, np.ndarray]]
    prone: np.ndarray
    normed: dict[tuple[str, str], np.ndarray]
    group: np.ndarray | None = None  # each row's one key shared with other candidates (-1: none); None: some
    # row shares two, so de-duplication walks


def _no_groups(cs: _Candidates) -> _Candidates:
    """Candidates with de-duplication off or nothing to de-duplicate, as groups of none (-1 each)."""
    return _Candidates(cs.ids, cs.rows, cs.ranks, cs.prone, cs.normed, np.full(len(cs.ids), -1, dtype=np.int64))


class Retriever:
    def __init__(self, cfg: RagrigConfig, version: IndexVersion | None = None, embedder: Embedder | None = None) -> None:
        self.cfg = cfg
        self.version = version or IndexVersion.current(cfg)
        wanted = model_id(cfg.embedding)
        if self.version.model_id != wanted:
            raise ModelMismatchError(
                f"index {self.version.layout.key}@{self.version.version} was built with embedding model "
                f"'{self.version.model_id}', but the config asks for '{wanted}'; re-ingest or change embedding.model"
            )
        self.chunks: list[Chunk] = self.version.chunks
        self.row = self.version.chunk_index
        self.bm25 = Bm25Index.load(self.version.bm25_dir, cfg.index.bm25)
        self.collection = self.version.collection()
        self.headers = HeaderIndex(self.chunks)
        self.embedder = embedder or Embedder(cfg.embedding)
        if cfg.retrieval.fusion.weights.get("vector", 0) > 0:
            _ = self.embedder.model  # load now, so query timings measure queries, not model loading
        r = cfg.retrieval
        self._processors: dict[tuple[Any, ...], QueryProcessor] = {}
        self.processor = self.processor_for(r)
        self.cache: QueryCache[RetrievalResult] = QueryCache(r.cache_size, r.cache_ttl_s)
        self._sections: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)
        for i, c in enumerate(self.chunks):
            self._sections[(c.doc_id, tuple(c.header_path[:-1]))].append(i)
        self._mask_cache: dict[Filters, np.ndarray] = {}
        # sweeps turn these on: candidates per (source, processed query, depth) and query vectors per text are
        # computed once and reused across fusion/shaping variants of the same index version
        self.candidate_memo: dict[tuple[Any, ...], dict[str, float]] | None = None
        self.qvec_memo: dict[str, np.ndarray] | None = None
        self._rank_memo: dict[int, tuple[dict[str, float], dict[str, int]]] = {}
        self._processed_memo: dict[tuple[int, str], ProcessedQuery] = {}
        self._cand_memo: dict[tuple[int, ...], _Candidates] = {}
        self._flat_memo: dict[tuple[int, ...], FlatCandidates] = {}
        self._last_dedup = 0
        # a published version never changes, so count once: Chroma's count() is a SQLite round trip per call
        self._vector_count: int | None = None
        self.load_ms = self._warm()

    def reuse_candidates(self, on: bool = True) -> None:
        self.candidate_memo = {} if on else None
        self._rank_memo = {}
        self._processed_memo = {}
        self._cand_memo = {}
        self._flat_memo = {}
        self.qvec_memo = {} if on else None

    def processor_for(self, r: RetrievalConfig) -> QueryProcessor:
        """The query processor for a retrieval config (normalisation, expansion, synonyms), built once."""
        key = (r.normalise, r.expansion, r.synonyms, r.max_query_chars)
        proc = self._processors.get(key)
        if proc is None:
            proc = self._processors[key] = QueryProcessor(
                self.version.keywords, load_synonyms(r.synonyms), normalise=r.normalise, expansion=r.expansion,
                max_chars=r.max_query_chars,
            )
        return proc

    @cached_property
    def dedup_keys(self) -> list[tuple[tuple[Any, ...], ...]]:
        """De-duplication keys per chunk row, computed once per index version."""
        return [dedup_key(c) for c in self.chunks]

    @cached_property
    def _prone_np(self) -> np.ndarray:
        return np.asarray(self.dedup_prone, dtype=bool)

    @cached_property
    def dedup_prone(self) -> list[bool]:
        """Per row: does any other chunk share one of its keys? Rows that cannot collide skip the check."""
        count: dict[tuple[Any, ...], int] = defaultdict(int)
        for keys in self.dedup_keys:
            for k in keys:
                count[k] += 1
        return [any(count[k] > 1 for k in keys) for keys in self.dedup_keys]

    @cached_property
    def term_index(self) -> TermIndex:
        from ragrig.retrieval.multihop.hops import TermIndex

        return TermIndex(self)

    def _warm(self) -> float:
        """Load what the first query would otherwise pay for (Chroma's HNSW segment, BM25 matrices)."""
        t0 = time.perf_counter()
        if self.chunks and self.cfg.retrieval.fusion.weights.get("vector", 0) > 0:
            dim = int(self.version.manifest["embedding"]["dim"])
            self.vector_runs(np.ones((1, dim), dtype=np.float32) / np.sqrt(dim), 1)
        self.bm25.scores(["warm"])
        return (time.perf_counter() - t0) * 1000

    # ---- candidates ---------------------------------------------------------
    def _mask(self, filters: Filters | None) -> np.ndarray | None:
        if filters is None or filters.empty:
            return None
        m = self._mask_cache.get(filters)
        if m is None:
            m = self._mask_cache[filters] = filters.mask(self.chunks)
        return m

    def bm25_run(self, text: str, n: int, mask: np.ndarray | None = None) -> dict[str, float]:
        toks = self.bm25.tokenizer(text)
        return {self.chunks[i].chunk_id: s for i, s in self.bm25.search(toks, n, mask)}

    def vector_runs(self, vecs: np.ndarray, n: int, mask: np.ndarray | None = None) -> list[dict[str, float]]:
        if self._vector_count is None:
            self._vector_count = int(self.collection.count())
        total = self._vector_count
        if total == 0 or len(vecs) == 0:
            return [{} for _ in range(len(vecs))]
        kwargs: dict[str, Any] = {}
        if mask is not None:
            allowed = [self.chunks[i].chunk_id for i in np.nonzero(mask)[0]]
            if not allowed:
                return [{} for _ in range(len(vecs))]
            kwargs["ids"] = allowed
            total = len(allowed)
        res = self.collection.query(
            query_embeddings=np.asarray(vecs, dtype=np.float32), n_results=min(n, total), include=["distances"], **kwargs
        )
        out = []
        for ids, dists in zip(res["ids"], res["distances"]):
            out.append({i: 1.0 - float(d) for i, d in zip(ids, dists)})
        return out

    def header_run(self, text: str, n: int, mask: np.ndarray | None = None, threshold: float | None = None) -> dict[str, float]:
        run: dict[str, float] = {}
        th = self.cfg.retrieval.header_threshold if threshold is None else threshold
        for m in self.headers.mentions(text, th, limit=n):
            for row in m.rows:
                if mask is not None and not mask[row]:
                    continue
                cid = self.chunks[row].chunk_id
                run[cid] = max(run.get(cid, 0.0), m.score)
        return run

    def _active_sources(self, r: RetrievalConfig) -> list[str]:
        return [s for s in ("bm25", "vector", "header") if r.fusion.weights.get(s, 0.0) > 0]

    def candidate_runs(
        self, pq: ProcessedQuery, qvec: np.ndarray | None, r: RetrievalConfig, mask: np.ndarray | None, t: dict[str, float],
        vector_run: dict[str, float] | None = None,
    ) -> Runs:
        """Each active source's candidates; ``vector_run``: this query's vector candidates, already fetched in
        a batch (search_many)."""
        runs: Runs = {}
        active = self._active_sources(r)
        mkey = None if mask is None else id(mask)  # masks are memoised per Filters, so ids are stable
        plans = (
            ("bm25", (pq.bm25_text, r.candidates, mkey), lambda: self.bm25_run(pq.bm25_text, r.candidates, mask)),
            ("vector", (pq.text, r.candidates, mkey),
             (lambda: vector_run) if vector_run is not None
             else lambda: self.vector_runs(qvec[None, :], r.candidates, mask)[0]),  # type: ignore[index]
            ("header", (pq.text, r.candidates, r.header_threshold, mkey),
             lambda: self.header_run(pq.text, r.candidates, mask, r.header_threshold)),
        )
        for source, key, compute in plans:
            if source not in active or (source == "vector" and qvec is None):
                continue
            t0 = time.perf_counter()
            memo_key = (source, *key)
            run = self.candidate_memo.get(memo_key) if self.candidate_memo is not None else None
            if run is None:
                run = compute()
                if self.candidate_memo is not None:
                    self.candidate_memo[memo_key] = run
            runs[source] = run
            t[source] = (time.perf_counter() - t0) * 1000
        return runs

    # ---- fusion and shaping --------------------------------------------------
    def fuse_runs(self, runs: Runs, r: RetrievalConfig) -> list[tuple[str, float]]:
        f = r.fusion
        present = {s: run for s, run in runs.items() if run}
        if f.method == "rrf":
            top = max_score("rrf", list(present), f.weights, f.rrf_k)
            if self.candidate_memo is not None:  # sweeps: ranks are memoised per run, skip re-sorting
                fused = rrf_from_ranks({s: self._ranks(run) for s, run in present.items()}, k=f.rrf_k, weights=f.weights)
            else:
                fused = fuse(present, "rrf", k=f.rrf_k, weights=f.weights)
            return [(i, v / top) for i, v in fused]
        fused = fuse(present, "weighted", weights=f.weights, normalization=f.normalization)
        scaled = minmax(dict(fused))
        return [(i, scaled[i]) for i, _ in fused]

    def _ranks(self, run: dict[str, float]) -> dict[str, int]:
        """1-based ranks by (-score, id); memoised with the candidate memo (a memoised run is the same object)."""
        if self.candidate_memo is not None:
            got = self._rank_memo.get(id(run))
            if got is not None and got[0] is run:
                return got[1]
        ranks = {cid: i + 1 for i, (cid, _) in enumerate(sorted(run.items(), key=lambda kv: (-kv[1], kv[0])))}
        if self.candidate_memo is not None:
            self._rank_memo[id(run)] = (run, ranks)
        return ranks

    def _hit(self, row: int, score: float, runs: Runs, ranks: dict[str, dict[str, int]]) -> Hit:
        c = self.chunks[row]
        cid = c.chunk_id
        sources = {}
        for s, run in runs.items():
            rank = ranks[s].get(cid)
            if rank is not None:
                sources[s] = SourceScore(rank, float(run[cid]))
        return Hit(
            chunk_id=c.chunk_id, doc_id=c.doc_id, header_path=list(c.header_path), text=c.text, score=float(score),
            sources=sources, start=c.start, end=c.end, tokens=c.tokens,
        )

    def shape(
        self, pq: ProcessedQuery, fused: list[tuple[str, float]], runs: Runs, r: RetrievalConfig, top_k: int,
        mask: np.ndarray | None,
    ) -> list[Hit]:
        ranks = {s: self._ranks(run) for s, run in runs.items()}
        enough = max(top_k, r.adaptive.max_results if r.adaptive.enabled else 0)
        selected = self._select(fused, r, None if pq.comparison else enough)
        hits = [self._hit(row, score, runs, ranks) for row, score in selected]
        if pq.comparison:
            hits = self._guarantee_entities(pq.comparison, hits, runs, ranks, r, top_k, mask)
        hits = hits[:top_k]
        if r.adaptive.enabled:
            hits = adaptive_cut(hits, r.adaptive.min_results, min(r.adaptive.max_results, top_k), r.adaptive.gap)
        if r.section_expansion_tokens > 0:
            hits = self._expand_sections(hits, r.section_expansion_tokens)
        return hits

    def _select(self, fused: list[tuple[str, float]], r: RetrievalConfig, limit: int | None) -> list[tuple[int, float]]:
        """(row, score) of the fused list above min_relevance, de-duplicated (identical text, or pieces of
        one section: the first one stays), up to ``limit``."""
        out: list[tuple[int, float]] = []
        seen: set[tuple[Any, ...]] = set()
        self._last_dedup = 0
        prone = self.dedup_prone if r.dedup else []
        for cid, score in fused:
            if score < r.min_relevance:
                break
            row = self.row[cid]
            if r.dedup and prone[row]:
                keys = self.dedup_keys[row]
                if not seen.isdisjoint(keys):
                    self._last_dedup += 1
                    continue
                seen.update(keys)
            out.append((row, score))
            if limit is not None and len(out) >= limit:
                break
        return out

    @staticmethod
    def _plain(pq: ProcessedQuery, r: RetrievalConfig) -> bool:
        """Whether shaping is only selection: nothing to pin (comparison), cut adaptively or expand."""
        return not (pq.comparison or r.adaptive.enabled or r.section_expansion_tokens > 0)

    def _cut(self, fused: list[tuple[str, float]], runs: Runs, r: RetrievalConfig, top_k: int,
             n_hits: int) -> tuple[list[Hit], list[Chunk]]:
        """``shape`` for a plain query, lean: the same selection, full Hits for the first ``n_hits`` only."""
        ranks = {s: self._ranks(run) for s, run in runs.items()}
        selected = self._select(fused, r, top_k)
        hits = [self._hit(row, score, runs, ranks) for row, score in selected[:n_hits]]
        return hits, [self.chunks[row] for row, _ in selected]

    def _candidates(self, runs: Runs) -> _Candidates:
        key = tuple(id(run) for run in runs.values())
        cs = self._cand_memo.get(key)
        if cs is None:
            ids = sorted({c for run in runs.values() for c in run})  # id order: the tie-break
            pos = {c: i for i, c in enumerate(ids)}
            rows = np.fromiter((self.row[c] for c in ids), dtype=np.int64, count=len(ids))
            ranks: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for source, run in runs.items():
                rk = np.zeros(len(ids))
                has = np.zeros(len(ids), dtype=bool)
                for cid, rank in self._ranks(run).items():
                    rk[pos[cid]] = rank
                    has[pos[cid]] = True
                ranks[source] = (rk, has)
            # rows that share a de-duplication key with another candidate of this query (only they can be
            # dropped, or drop another); a superset is safe, it only means more rows get checked
            local = np.zeros(len(ids), dtype=bool)
            group: np.ndarray | None = np.full(len(ids), -1, dtype=np.int64)
            if len(rows) and self._prone_np[rows].any():
                count: dict[Any, int] = defaultdict(int)
                for row in rows[self._prone_np[rows]].tolist():
                    for k in self.dedup_keys[row]:
                        count[k] += 1
                gid: dict[Any, int] = {}
                for i, row in enumerate(rows.tolist()):
                    if not self._prone_np[row]:
                        continue
                    shared = [k for k in self.dedup_keys[row] if count[k] > 1]
                    if shared:
                        local[i] = True
                        if len(shared) > 1:
                            group = None
                        elif group is not None:
                            group[i] = gid.setdefault(shared[0], len(gid))
            cs = self._cand_memo[key] = _Candidates(ids, rows, ranks, local, {}, group)
        return cs

    def _fuse_arrays(self, runs: Runs, r: RetrievalConfig) -> tuple[_Candidates, np.ndarray, np.ndarray]:
        """``fuse_runs`` on arrays over memoised candidates: (candidates, order, scores in that order). The
        arithmetic is fusion.py's, term by term in the same source order, so scores and ties are bit-identical."""
        f = r.fusion
        present = {s: run for s, run in runs.items() if run}
        cs = self._candidates(present)
        n = len(cs.ids)
        acc = np.zeros(n)
        if f.method == "rrf":
            included = np.zeros(n, dtype=bool)
            for source in present:
                w = float(f.weights.get(source, 0.0))
                if w == 0.0:
                    continue
                rk, has = cs.ranks[source]
                acc = acc + np.where(has, w / (f.rrf_k + rk), 0.0)
                included |= has
            acc = acc / max_score("rrf", list(present), f.weights, f.rrf_k)
            order = np.argsort(-acc, kind="stable")  # candidates are in id order: ties by id
            order = order[included[order]]
            return cs, order, acc[order]
        contributed = False
        for source, run in present.items():
            w = float(f.weights.get(source, 0.0))
            if w == 0.0:
                continue
            acc = acc + w * self._normed(cs, source, run, f.normalization)
            contributed = True
        if not contributed:
            return cs, np.zeros(0, dtype=np.int64), acc[:0]
        order = np.argsort(-acc, kind="stable")
        lo, hi = float(acc.min()), float(acc.max())
        scaled = np.ones(n) if hi - lo <= 1e-12 else (acc - lo) / (hi - lo)
        return cs, order, scaled[order]

    @staticmethod
    def _normed(cs: _Candidates, source: str, run: dict[str, float], normalization: str) -> np.ndarray:
        """A source's normalised scores over the query's candidates (absent ones at its floor), memoised."""
        normed = cs.normed.get((source, normalization))
        if normed is None:
            scores = NORMALIZERS[normalization](run)
            floor = min(scores.values())
            normed = cs.normed[(source, normalization)] = np.array([scores.get(c, floor) for c in cs.ids])
        return normed

    def _cut_arrays(self, cs: _Candidates, order: np.ndarray, scores: np.ndarray, runs: Runs, r: RetrievalConfig,
                    top_k: int, n_hits: int) -> tuple[list[Hit], list[Chunk]]:
        """``_cut`` on arrays: the same selection (min_relevance, de-duplication), Hits for the first n."""
        if r.min_relevance > 0:
            below = np.nonzero(scores < r.min_relevance)[0]
            if len(below):
                order, scores = order[: below[0]], scores[: below[0]]
        rows = cs.rows[order]
        self._last_dedup = 0
        if r.dedup and cs.prone.any():
            # only rows that share a key with another candidate can be dropped
            if cs.group is not None:
                keep, self._last_dedup = dedup_first_of_group(cs.group[order], top_k)
            else:
                keep, self._last_dedup = dedup_walk([self.dedup_keys[row] for row in rows.tolist()],
                                                    cs.prone[order], top_k)
            rows, scores = rows[keep], scores[keep]
        selected = list(zip(rows[:top_k].tolist(), scores[:top_k].tolist()))
        ranks = {s: self._ranks(run) for s, run in runs.items()}
        hits = [self._hit(row, score, runs, ranks) for row, score in selected[:n_hits]]
        return hits, [self.chunks[row] for row, _ in selected]

    def entity_row(self, entity: str, r: RetrievalConfig, mask: np.ndarray | None) -> int | None:
        """The best chunk for a named thing: a header match first, else the top hybrid hit for the name alone."""
        for m in self.headers.lookup(entity, r.header_threshold):
            rows = [x for x in m.rows if mask is None or mask[x]]
            if rows:
                return rows[0]
        sub = self.processor_for(r).process(entity)
        vec = self.embedder.encode_queries([sub.text])[0] if "vector" in self._active_sources(r) else None
        runs = self.candidate_runs(sub, vec, r, mask, {})
        fused = self.fuse_runs(runs, r)
        return self.row[fused[0][0]] if fused else None

    def _guarantee_entities(
        self, entities: list[str], hits: list[Hit], runs: Runs, ranks: dict[str, dict[str, int]], r: RetrievalConfig,
        top_k: int, mask: np.ndarray | None,
    ) -> list[Hit]:
        pinned: list[Hit] = []
        for ent in entities:
            row = self.entity_row(ent, r, mask)
            if row is None:
                continue
            cid = self.chunks[row].chunk_id
            existing = next((h for h in hits if h.chunk_id == cid), None)
            h = existing or self._hit(row, 0.0, runs, ranks)
            h.reason = f"comparison: {ent}"
            if h not in pinned:
                pinned.append(h)
        room = max(0, top_k - len(pinned))
        rest = [h for h in hits if h not in pinned][:room]
        merged = [h for h in hits if h in pinned or h in rest] + [h for h in pinned if h not in hits]
        return merged[:top_k] if len(merged) > top_k else merged

    def _expand_sections(self, hits: list[Hit], budget: int) -> list[Hit]:
        """A small matched chunk brings its section's sibling chunks (in document order) within a token budget."""
        out: list[Hit] = []
        have = {h.chunk_id for h in hits}
        for h in hits:
            out.append(h)
            row = self.row[h.chunk_id]
            c = self.chunks[row]
            if c.tokens >= budget:
                continue
            used = c.tokens
            for sib in self._sections.get((c.doc_id, tuple(c.header_path[:-1])), []):
                s = self.chunks[sib]
                if s.chunk_id in have or used + s.tokens > budget:
                    continue
                used += s.tokens
                have.add(s.chunk_id)
                out.append(
                    Hit(chunk_id=s.chunk_id, doc_id=s.doc_id, header_path=list(s.header_path), text=s.text,
                        score=h.score, reason=f"section of {h.chunk_id}", start=s.start, end=s.end, tokens=s.tokens)
                )
        return out

    # ---- public API -------------------------------------------------------------
    def _cache_key(self, pq: ProcessedQuery, r: RetrievalConfig, top_k: int, filters: Filters | None) -> tuple[Any, ...]:
        return (pq.text, pq.bm25_text, self.version.layout.key, self.version.version, top_k, filters,
                json.dumps(r.model_dump(), sort_keys=True))

    def search(
        self, query: str, *, top_k: int | None = None, filters: Filters | None = None, qvec: np.ndarray | None = None,
        retrieval: RetrievalConfig | None = None, use_cache: bool = True, max_hops: int | None = None,
        processed: ProcessedQuery | None = None, lean: int | None = None, vector_run: dict[str, float] | None = None,
    ) -> RetrievalResult:
        """Hybrid retrieval for one query; ``max_hops`` (default: retrieval.max_hops) > 0 adds multi-hop.
        ``lean=n`` (batch evaluation): when shaping is only selection (no comparison, adaptive cut, section
        expansion or hops), build full Hits for the first n only and return the whole ranking as chunks in
        ``result.ranked``; the ranking is the same either way."""
        r = retrieval or self.cfg.retrieval
        k = top_k or r.top_k
        hops = r.max_hops if max_hops is None else max_hops
        t: dict[str, float] = {}
        t0 = time.perf_counter()
        pq = processed or self.processor_for(r).process(query)
        key = self._cache_key(pq, r, k, filters) + (hops,) if use_cache else None
        if use_cache:
            hit = self.cache.get(key)
            if hit is not None:
                return RetrievalResult(**{**hit.__dict__, "cached": True})
        mask = self._mask(filters)
        if qvec is None and "vector" in self._active_sources(r):
            t1 = time.perf_counter()
            qvec = self.qvec_memo.get(pq.text) if self.qvec_memo is not None else None
            if qvec is None:
                qvec = self.embedder.encode_queries([pq.text])[0]
                if self.qvec_memo is not None:
                    self.qvec_memo[pq.text] = qvec
            t["embed"] = (time.perf_counter() - t1) * 1000
        runs = self.candidate_runs(pq, qvec, r, mask, t, vector_run)
        t1 = time.perf_counter()
        ranked = None
        if lean is not None and hops == 0 and self._plain(pq, r) and self.candidate_memo is not None:
            # sweeps: fusion and selection on arrays over the memoised candidates (bit-identical scores)
            cs, order, scores = self._fuse_arrays(runs, r)
            t["fuse"] = (time.perf_counter() - t1) * 1000
            t1 = time.perf_counter()
            hits, ranked = self._cut_arrays(cs, order, scores, runs, r, k, lean)
        else:
            fused = self.fuse_runs(runs, r)
            t["fuse"] = (time.perf_counter() - t1) * 1000
            t1 = time.perf_counter()
            if lean is not None and hops == 0 and self._plain(pq, r):
                hits, ranked = self._cut(fused, runs, r, k, lean)
            else:
                hits = self.shape(pq, fused, runs, r, k, mask)
        t["shape"] = (time.perf_counter() - t1) * 1000
        t["total"] = (time.perf_counter() - t0) * 1000
        result = RetrievalResult(
            query=pq.raw, normalized=pq.text, bm25_query=pq.bm25_text, expansions=pq.expansions,
            comparison=pq.comparison, hits=hits, version=self.version.version, timings_ms=t,
            candidates={s: len(run) for s, run in runs.items()}, ranked=ranked,
        )
        if hops > 0:
            from ragrig.retrieval.multihop.hops import multi_hop

            result = multi_hop(self, result, r, k, hops)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("query %r: %d hits", pq.text[:80], len(result.hits), extra={"ragrig": {
                "event": "retrieval.query", "version": self.version.version, "candidates": result.candidates,
                "deduplicated": self._last_dedup, "hits": len(result.hits), "hops": len(result.hops),
                "timings_ms": {k2: round(v, 3) for k2, v in result.timings_ms.items()}}})
        if use_cache:
            self.cache.put(key, result)
        return result

    def _batched_vector_runs(
        self, processed: Sequence[ProcessedQuery], vecs: np.ndarray | None, r: RetrievalConfig, filters: Filters | None
    ) -> tuple[list[dict[str, float]] | None, float]:
        """Every query's vector candidates in one Chroma query (3x cheaper than one call per query on
        SciFact); with the candidate memo on (sweeps), only the texts it does not hold yet, into the memo."""
        if vecs is None or not len(processed):
            return None, 0.0
        t0 = time.perf_counter()
        mask = self._mask(filters)
        runs: list[dict[str, float]] | None = None
        if self.candidate_memo is None:
            runs = self.vector_runs(vecs, r.candidates, mask)
        else:
            mkey = None if mask is None else id(mask)
            need: dict[tuple[Any, ...], int] = {}
            for i, pq in enumerate(processed):
                key = ("vector", pq.text, r.candidates, mkey)
                if key not in self.candidate_memo and key not in need:
                    need[key] = i
            if need:
                fetched = self.vector_runs(vecs[list(need.values())], r.candidates, mask)
                self.candidate_memo.update(zip(need, fetched))
        return runs, (time.perf_counter() - t0) * 1000 / len(processed)

    def _search_batch(
        self, processed: Sequence[ProcessedQuery], vecs: np.ndarray | None, vruns: list[dict[str, float]] | None,
        r: RetrievalConfig, k: int, filters: Filters | None, lean: int, max_hops: Sequence[int | None] | None,
    ) -> dict[int, RetrievalResult]:
        """Sweeps (memoised candidates, lean results): fuse and select every plain single-hop query in one array
        pass (retrieval/batch.py) rather than one query at a time; the same rankings, scores and Hits as
        ``search``. Returns results by query position; the other queries (comparison, adaptive cut, section
        expansion, hops, or rows sharing two de-duplication keys) are left to ``search``. Each result's
        fuse and shape timings are its share of the batch's."""
        mask = self._mask(filters)
        picked: list[int] = []
        runs_of: list[Runs] = []
        present: list[tuple[str, ...]] = []  # per picked query: the sources that returned anything
        cands: list[_Candidates] = []
        times: list[dict[str, float]] = []
        for i, pq in enumerate(processed):
            hops = max_hops[i] if max_hops is not None and max_hops[i] is not None else r.max_hops
            if hops != 0 or not self._plain(pq, r):
                continue
            t: dict[str, float] = {}
            runs = self.candidate_runs(pq, None if vecs is None else vecs[i], r, mask, t,
                                       None if vruns is None else vruns[i])
            live = {s: run for s, run in runs.items() if run}
            cs = self._candidates(live)
            if r.dedup and cs.group is None and cs.prone.any():
                continue  # a row shares two keys: the per-query walk handles it
            picked.append(i)
            runs_of.append(runs)
            present.append(tuple(live))
            cands.append(cs)
            times.append(t)
        if not picked:
            return {}
        t0 = time.perf_counter()
        key = tuple(id(cs) for cs in cands)
        flat = self._flat_memo.get(key)
        if flat is None or flat.present != present:
            flat = self._flat_memo[key] = flatten(
                [cs if cs.group is not None else _no_groups(cs) for cs in cands], present)
        normed = None
        if r.fusion.method != "rrf":
            nk = r.fusion.normalization
            for s in flat.sources:
                if (s, nk) not in flat.normed:
                    flat.normed[(s, nk)] = np.concatenate([
                        self._normed(cs, s, runs[s], nk) if s in p else np.zeros(len(cs.ids))
                        for cs, runs, p in zip(cands, runs_of, present)])
            normed = flat.normed
        order, scores, bounds = fuse_select(flat, r, k, normed)
        fuse_ms = (time.perf_counter() - t0) * 1000 / len(picked)
        out: dict[int, RetrievalResult] = {}
        for j, i in enumerate(picked):
            t1 = time.perf_counter()
            pq, runs, t = processed[i], runs_of[j], times[j]
            lo, hi = int(bounds[j]), int(bounds[j + 1])
            rows = flat.rows[order[lo:hi]].tolist()
            ranks = {s: self._ranks(run) for s, run in runs.items()}
            hits = [self._hit(row, score, runs, ranks) for row, score in zip(rows[:lean], scores[lo:lo + lean].tolist())]
            t["fuse"] = fuse_ms
            t["shape"] = (time.perf_counter() - t1) * 1000
            t["total"] = sum(t.values())
            out[i] = RetrievalResult(
                query=pq.raw, normalized=pq.text, bm25_query=pq.bm25_text, expansions=pq.expansions,
                comparison=pq.comparison, hits=hits, version=self.version.version, timings_ms=t,
                candidates={s: len(run) for s, run in runs.items()}, ranked=[self.chunks[row] for row in rows],
            )
        if log.isEnabledFor(logging.DEBUG):
            log.debug("batch of %d queries fused on arrays", len(picked), extra={"ragrig": {
                "event": "retrieval.batch", "version": self.version.version, "queries": len(picked),
                "fuse_ms_per_query": round(fuse_ms, 4)}})
        return out

    def search_many(
        self, queries: Sequence[str], *, top_k: int | None = None, filters: Filters | None = None,
        retrieval: RetrievalConfig | None = None, max_hops: Sequence[int | None] | None = None, lean: int | None = None,
    ) -> list[RetrievalResult]:
        """Many queries with one batched query-embedding call (what evaluation uses)."""
        r = retrieval or self.cfg.retrieval
        proc = self.processor_for(r)
        if self.candidate_memo is None:
            processed = [proc.process(q) for q in queries]
        else:  # sweeps: each processor handles each query once
            processed = []
            for q in queries:
                pq = self._processed_memo.get((id(proc), q))
                if pq is None:
                    pq = self._processed_memo[(id(proc), q)] = proc.process(q)
                processed.append(pq)
        vecs: np.ndarray | None = None
        if "vector" in self._active_sources(r):
            t0 = time.perf_counter()
            texts = [p.text for p in processed]
            if self.qvec_memo is not None:
                todo = list(dict.fromkeys(t for t in texts if t not in self.qvec_memo))
                if todo:
                    self.qvec_memo.update(zip(todo, self.embedder.encode_queries(todo)))
                vecs = np.vstack([self.qvec_memo[t] for t in texts]) if texts else None
            else:
                vecs = self.embedder.encode_queries(texts)
            per = (time.perf_counter() - t0) * 1000 / max(1, len(queries))
        vruns, vper = self._batched_vector_runs(processed, vecs, r, filters)
        out = []
        # a batch allocates many short-lived objects over a large live heap (chunks, candidate memo): cyclic GC
        # passes cost ~0.4 s per 300 queries on SciFact and find next to nothing, so pause them for the batch
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            batched: dict[int, RetrievalResult] = {}
            if lean is not None and self.candidate_memo is not None:
                batched = self._search_batch(processed, vecs, vruns, r, top_k or r.top_k, filters, lean, max_hops)
            for i, q in enumerate(queries):
                res = batched.get(i) or self.search(
                    q, top_k=top_k, filters=filters, qvec=None if vecs is None else vecs[i], retrieval=r,
                    use_cache=False, max_hops=None if max_hops is None else max_hops[i], processed=processed[i],
                    lean=lean, vector_run=None if vruns is None else vruns[i],
                )
                if vecs is not None:
                    res.timings_ms["embed"] = per
                    if "vector" in res.timings_ms:  # its share of the batched query (the lookup was ~0)
                        res.timings_ms["total"] += vper - res.timings_ms["vector"]
                        res.timings_ms["vector"] = vper
                out.append(res)
        finally:
            if gc_was_on:
                gc.enable()
        return out
