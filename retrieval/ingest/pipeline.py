"""Incremental, versioned ingestion as plain stage methods (Prefect tasks wrap them; ``run`` chains them).

discover -> plan (diff against the published version by content sha256) -> extract (new/changed
only, extraction cache) -> chunk -> embed (embedding cache) -> build a new version directory ->
publish (atomic CURRENT switch) -> prune old versions. Nothing changed and no ``--force``: no new
version is built. A crash anywhere before the switch leaves the published version untouched;
leftovers are swept at the start of the next ingest.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.cache.extractions import ExtractCache
from ragrig.retrieval.documents import Chunk, Document, FailedDoc, SourceDoc
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.files import fsync_dir, write_atomic
from ragrig.retrieval.index.format import (
    BM25_DIR,
    chunk_metadata,
    collection_name,
    collection_version,
    new_manifest,
    write_config,
    write_keywords,
    write_manifest,
    write_tables,
)
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document
from ragrig.retrieval.ingest.discover import Discovery, beir_file, corpus_kind, discover, file_sha256
from ragrig.retrieval.ingest.embed import embed_with_cache
from ragrig.retrieval.ingest.extract import ExtractionError, Extractor
from ragrig.retrieval.ingest.keyword_mining import build_library
from ragrig.retrieval.markdown import parse_headers

log = logging.getLogger(__name__)

STAGES = ("discover", "plan", "extract", "chunk", "embed", "index", "publish")


@dataclass
class IngestStats:
    index_key: str = ""
    index_dir: str = ""
    version: str | None = None
    previous_version: str | None = None
    published: bool = False
    docs_seen: int = 0
    docs_new: int = 0
    docs_changed: int = 0
    docs_unchanged: int = 0
    docs_removed: int = 0
    docs_failed: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_cached: int = 0
    chunks_over_window: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    sources: list[SourceDoc]
    to_extract: list[SourceDoc]
    reused: list[Document]  # unchanged documents carried over from the published version
    reused_chunks: dict[str, list[Chunk]]
    removed: list[str]
    previous: str | None
    previous_docs: dict[str, Document] = field(default_factory=dict)  # to keep a last good version on failure

    @property
    def changed_nothing(self) -> bool:
        return not self.to_extract and not self.removed and self.previous is not None


class IngestPipeline:
    def __init__(
        self,
        cfg: RagrigConfig,
        *,
        force: bool = False,
        progress: bool = False,
        hook: Callable[[str], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self.force = force
        self.progress = progress
        self.layout = Layout(cfg)
        self.stats = IngestStats(index_key=self.layout.key, index_dir=str(self.layout.index_dir))
        self.embedder = Embedder(cfg.embedding)
        self._hook = hook  # called at stage boundaries (crash tests kill the process there)
        self._embed_cache: EmbeddingCache | None = None
        self._corpus_file: dict[str, Any] | None = None  # BEIR: the corpus file's hash (see _unchanged_beir_file)

    # ---- helpers ----------------------------------------------------------
    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        if self._hook:
            self._hook(f"before:{stage}")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stats.seconds[stage] = round(self.stats.seconds.get(stage, 0.0) + time.perf_counter() - t0, 3)
        st = self.stats
        log.info("ingest stage %s: %.3f s", stage, self.stats.seconds[stage], extra={"ragrig": {
            "event": "ingest.stage", "index": st.index_key, "stage": stage, "seconds": self.stats.seconds[stage],
            "docs_seen": st.docs_seen, "docs_new": st.docs_new, "docs_changed": st.docs_changed,
            "docs_removed": st.docs_removed, "docs_failed": st.docs_failed, "chunks": st.chunks,
            "chunks_embedded": st.chunks_embedded, "chunks_cached": st.chunks_cached}})
        if self._hook:
            self._hook(f"after:{stage}")

    @property
    def embed_cache(self) -> EmbeddingCache:
        if self._embed_cache is None:
            self._embed_cache = EmbeddingCache(self.layout.embedding_cache)
        return self._embed_cache

    def fail(self, doc_id: str, stage: str, reason: str) -> None:
        self.stats.failures.append({"doc_id": doc_id, "stage": stage, "reason": reason})
        self.stats.docs_failed = len(self.stats.failures)

    # ---- stages -------------------------------------------------------------
    def sweep_leftovers(self) -> list[str]:
        """Remove what a crashed ingest left behind: temp/trash version dirs and orphan collections."""
        removed: list[str] = []
        vdir = self.layout.versions_dir
        if vdir.is_dir():
            for p in vdir.iterdir():
                if p.name.startswith((".tmp-", ".trash-")):
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p.name)
        published = set(self.layout.published_versions())
        if self.layout.chroma_dir.exists() or self.cfg.index.chroma.mode == "http":
            client = chroma.chroma_client(self.cfg.index.chroma, self.layout.chroma_dir)
            for name in chroma.list_collections(client):
                version = collection_version(self.layout.key, name)
                if version is not None and version not in published:
                    chroma.delete_collection(client, name)
                    removed.append(name)
        return removed

    def discover(self) -> Discovery:
        with self.timed("discover"):
            kind = corpus_kind(self.cfg.corpus)  # clear error for a missing corpus before anything else
            if kind == "beir":
                same = self._unchanged_beir_file()
                if same is not None:
                    return same
            found = discover(self.cfg.corpus)
            for f in found.failed:
                self.fail(f.doc_id, f.stage, f.reason)
            self.stats.docs_seen = len(found.docs) + len(found.failed)
        return found

    def _unchanged_beir_file(self) -> Discovery | None:
        """A BEIR corpus is one file: when its bytes are the ones the current version was built from (same
        extractor, no failure beyond bad records, which the same bytes repeat), nothing can have changed, so
        the file is hashed rather than parsed line by line. Else None, and the file's record is kept for
        the manifest of the version this run builds."""
        record = {"sha256": file_sha256(beir_file(self.cfg.corpus)), "extractor": BEIR_EXTRACTOR}
        self._corpus_file = record
        previous = self.layout.current_version()
        if previous is None or self.force:
            return None
        manifest = IndexVersion(self.cfg, self.layout, previous).manifest
        before = manifest.get("corpus_file")
        if not isinstance(before, dict) or {k: before.get(k) for k in record} != record:
            return None
        failed = before.get("failed", [])
        if any(f.get("stage") != "discover" for f in failed):
            return None  # a later stage failed for some document last time: the full path retries it
        self._corpus_file = before
        for f in failed:
            self.fail(f["doc_id"], f["stage"], f["reason"])
        docs = int(manifest["counts"]["documents"])
        self.stats.docs_seen = docs + len(failed)
        self.stats.docs_unchanged = docs
        self.stats.previous_version = previous
        return Discovery(unchanged_since=previous)

    def plan(self, found: Discovery) -> Plan:
        with self.timed("plan"):
            previous = self.layout.current_version()
            prev_docs: dict[str, Document] = {}
            prev_chunks: dict[str, list[Chunk]] = defaultdict(list)
            pv = None
            if previous is not None and not self.force:
                pv = IndexVersion(self.cfg, self.layout, previous)
                prev_docs = pv.documents_by_id
            to_extract: list[SourceDoc] = []
            reused: list[Document] = []
            seen: set[str] = set()
            for src in found.docs:
                seen.add(src.doc_id)
                old = prev_docs.get(src.doc_id)
                if old is not None and old.sha256 == src.sha256 and old.extractor == extractor_key(self.cfg, src):
                    reused.append(old)
                else:
                    to_extract.append(src)
                    if old is None:
                        self.stats.docs_new += 1
                    else:
                        self.stats.docs_changed += 1
            failed_ids = {f["doc_id"] for f in self.stats.failures}
            # a document that now fails to be read is not "removed": keep its last good version
            for doc_id in failed_ids & set(prev_docs):
                reused.append(prev_docs[doc_id])
                seen.add(doc_id)
            removed = sorted(set(prev_docs) - seen)
            if pv is not None and (to_extract or removed):  # the old chunks matter only when something changed
                for c in pv.chunks:
                    prev_chunks[c.doc_id].append(c)
            self.stats.docs_unchanged = len(reused)
            self.stats.docs_removed = len(removed)
            self.stats.previous_version = previous
            return Plan(found.docs, to_extract, reused, dict(prev_chunks), removed, previous if not self.force else None,
                        prev_docs)

    def extract(self, plan: Plan, mapper: BatchMapper | None = None) -> list[Document]:
        """Extract the new and changed documents in batches; ``mapper`` runs the batches (default: in order,
        here). Prefect maps them as tasks, on threads or Dask workers."""
        with self.timed("extract"):
            out: list[Document] = []
            size = self.cfg.flow.extract_batch
            batches = [plan.to_extract[i : i + size] for i in range(0, len(plan.to_extract), size)]
            bar = None
            if self.progress and plan.to_extract:
                from tqdm import tqdm

                bar = tqdm(total=len(plan.to_extract), desc="extract", unit="doc")
            run = mapper or (lambda cfg, bs: (extract_sources(cfg, b) for b in bs))
            for batch, (docs, failed) in zip(batches, run(self.cfg, batches)):
                self.record_extracted(docs, failed)
                out.extend(docs)
                if bar is not None:
                    bar.update(len(batch))
            if bar is not None:
                bar.close()
            return out

    def only_failures(self, plan: Plan, extracted: list[Document]) -> bool:
        """Every document to (re-)extract failed and none was removed: the published version still holds."""
        return plan.previous is not None and not self.force and not extracted and not plan.removed

    def record_extracted(self, docs: list[Document], failed: list[FailedDoc]) -> None:
        for f in failed:
            self.fail(f.doc_id, f.stage, f.reason)
        for d in docs:
            for w in d.warnings:
                self.stats.warnings.append(f"{d.doc_id}: {w}")

    def chunking_params(self) -> ChunkingParams:
        window = self.embedder.window
        if self.cfg.embedding.document_prefix:
            window -= self.embedder.count_tokens([self.cfg.embedding.document_prefix])[0]
        limit = min(self.cfg.chunking.max_tokens or window, window)
        return ChunkingParams(
            max_header_level=self.cfg.chunking.max_header_level,
            max_tokens=limit,
            drop_empty_sections=self.cfg.chunking.drop_empty_sections,
        )

    def chunk(self, docs: list[Document]) -> list[Chunk]:
        with self.timed("chunk"):
            if not docs:
                return []
            params = self.chunking_params()
            out: list[Chunk] = []
            for d in docs:
                try:
                    chunks = chunk_document(d, params, self.embedder.count_tokens)
                except Exception as exc:
                    self.fail(d.doc_id, "chunk", f"{type(exc).__name__}: {exc}")
                    continue
                if not chunks:
                    self.stats.warnings.append(f"{d.doc_id}: no chunks (no text outside empty headers)")
                out.extend(chunks)
            self.stats.chunks_over_window = sum(1 for c in out if c.tokens > params.max_tokens)
            return out

    def embed(self, chunks: list[Chunk]) -> np.ndarray:
        with self.timed("embed"):
            vecs, new = embed_with_cache(
                self.embedder,
                self.embed_cache,
                [c.search_text for c in chunks],
                [c.sha256 for c in chunks],
                tokens=[c.tokens for c in chunks],
                progress=self.progress,
            )
            self.stats.chunks_embedded = new
            self.stats.chunks_cached = len({c.sha256 for c in chunks}) - new
            return vecs

    def assemble(self, plan: Plan, extracted: list[Document], new_chunks: list[Chunk]) -> tuple[list[Document], list[Chunk]]:
        """All documents and chunks of the new version, in corpus order."""
        failed = {f["doc_id"] for f in self.stats.failures if f["stage"] != "discover"}
        # a changed document that now fails keeps its last good version: a bad edit never loses data
        kept = [plan.previous_docs[i] for i in sorted(failed) if i in plan.previous_docs]
        docs_by_id = {d.doc_id: d for d in [*plan.reused, *kept]}
        docs_by_id.update({d.doc_id: d for d in extracted if d.doc_id not in failed})
        chunks_by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for d in [*plan.reused, *kept]:
            chunks_by_doc[d.doc_id] = list(plan.reused_chunks.get(d.doc_id, []))
        for c in new_chunks:
            if c.doc_id not in failed:
                chunks_by_doc[c.doc_id].append(c)
        order = sorted(docs_by_id)
        docs = [docs_by_id[i] for i in order]
        chunks = [c for i in order for c in chunks_by_doc.get(i, [])]
        return docs, chunks

    def build(self, docs: list[Document], chunks: list[Chunk], vectors: np.ndarray) -> str:
        """Write a complete new version directory and Chroma collection; return its name (not yet published)."""
        with self.timed("index"):
            version = self.layout.next_version()
            tmp = self.layout.versions_dir / f".tmp-{version}"
            tmp.mkdir(parents=True, exist_ok=False)
            write_tables(tmp, docs, chunks)
            if self._hook:
                self._hook("index:tables")
            bm25 = Bm25Index.build([c.search_text for c in chunks], self.cfg.index.bm25)
            bm25.save(tmp / BM25_DIR)
            titles = [h.title for d in docs for h in parse_headers(d.markdown)]
            library = build_library(titles, [c.text for c in chunks])
            write_keywords(tmp, library)
            if self._hook:
                self._hook("index:bm25")
            client = chroma.chroma_client(self.cfg.index.chroma, self.layout.chroma_dir)
            dim = int(vectors.shape[1]) if len(chunks) else self.embedder.dim
            col = chroma.create_collection(client, collection_name(self.layout.key, version), dim)
            if chunks:
                chroma.add_vectors(col, [c.chunk_id for c in chunks], vectors, [chunk_metadata(c) for c in chunks])
            if self._hook:
                self._hook("index:chroma")
            write_config(tmp, self.cfg)
            corpus_file = None
            if self._corpus_file is not None:  # BEIR: the file this version was built from, and what failed in it
                corpus_file = {**self._corpus_file, "failed": list(self.stats.failures)}
            write_manifest(tmp, new_manifest(self.cfg, version=version, index_key=self.layout.key,
                                             corpus_kind=corpus_kind(self.cfg.corpus), model_id=self.embedder.id,
                                             dim=dim, docs=docs, chunks=chunks, corpus_file=corpus_file))
            fsync_dir(tmp)
            final = self.layout.version_dir(version)
            tmp.rename(final)
            fsync_dir(self.layout.versions_dir)
            return version

    def publish(self, version: str) -> None:
        with self.timed("publish"):
            write_atomic(self.layout.current_file, (version + "\n").encode())
            self.stats.version = version
            self.stats.published = True
            self.prune()

    def prune(self) -> list[str]:
        keep = self.cfg.index.keep_versions
        versions = self.layout.published_versions()
        current = self.layout.current_version()
        old = [v for v in versions if v != current][: max(0, len(versions) - keep)]
        if not old:
            return []
        client = chroma.chroma_client(self.cfg.index.chroma, self.layout.chroma_dir)
        for v in old:
            trash = self.layout.versions_dir / f".trash-{v}"
            self.layout.version_dir(v).rename(trash)  # no longer a published version from here on
            chroma.delete_collection(client, collection_name(self.layout.key, v))
            shutil.rmtree(trash, ignore_errors=True)
        return old

    def close(self) -> None:
        if self._embed_cache is not None:
            self._embed_cache.close()

    # ---- the whole sequence (one place for it) ------------------------------
    def _keep_previous(self, plan: Plan) -> IngestStats:
        assert plan.previous is not None
        return self._keep_previous_version(plan.previous)

    def _keep_previous_version(self, version: str) -> IngestStats:
        self.stats.version = version
        self.stats.chunks = IndexVersion(self.cfg, self.layout, version).manifest["counts"]["chunks"]
        return self.stats

    def run(self, stage: StageCall | None = None, mapper: BatchMapper | None = None, wait_s: float = 0.0) -> IngestStats:
        """Run every stage under the ingest lock. ``stage(name, fn, *args)`` runs one stage (default: call it;
        the Prefect flow passes one that runs it as a task) and ``mapper`` runs the extraction batches."""
        from ragrig.retrieval.index.files import ingest_lock

        call: StageCall = stage or (lambda name, fn, *args: fn(*args))
        corpus_kind(self.cfg.corpus)  # a missing corpus is an input error before anything is written
        t0 = time.perf_counter()
        try:
            with ingest_lock(self.layout.lock_file, wait_s=wait_s):
                call("sweep-leftovers", self.sweep_leftovers)
                found = call("discover", self.discover)
                if found.unchanged_since is not None:
                    return self._keep_previous_version(found.unchanged_since)
                plan = call("plan", self.plan, found)
                if plan.changed_nothing and not self.force:
                    return self._keep_previous(plan)
                extracted = self.extract(plan, mapper)
                if self.only_failures(plan, extracted):
                    return self._keep_previous(plan)
                new_chunks = call("chunk", self.chunk, extracted)
                docs, chunks = self.assemble(plan, extracted, new_chunks)
                vectors = call("embed", self.embed, chunks)
                self.stats.chunks = len(chunks)
                version = call("build-index", self.build, docs, chunks, vectors)
                call("publish", self.publish, version)
                return self.stats
        finally:
            self.stats.seconds["total"] = round(time.perf_counter() - t0, 3)
            self.close()


StageCall = Callable[..., Any]
"""``stage(name, fn, *args) -> fn(*args)``, possibly as an orchestrator task."""
BatchMapper = Callable[[RagrigConfig, list[list[SourceDoc]]], Iterable[tuple[list[Document], list[FailedDoc]]]]
"""Runs ``extract_sources(cfg, batch)`` for every batch and yields the results in batch order."""


_EXTRACTORS: dict[tuple[str, str, int, float], Extractor] = {}


def _extractor(cfg: RagrigConfig) -> Extractor:
    c = cfg.corpus
    key = (c.markdown_extractor, c.pdf_pipeline, c.max_doc_chars, c.max_unzipped_mb)
    extractor = _EXTRACTORS.get(key)
    if extractor is None:
        extractor = _EXTRACTORS[key] = Extractor(*key)
    return extractor


BEIR_EXTRACTOR = "beir:v1"


def extractor_key(cfg: RagrigConfig, src: SourceDoc) -> str:
    """What produced a document's Markdown; a stored document with another key is re-extracted."""
    return BEIR_EXTRACTOR if src.format == "beir" else _extractor(cfg).cache_key
_EXTRACT_CACHES: dict[str, ExtractCache] = {}


def extract_sources(cfg: RagrigConfig, batch: list[SourceDoc]) -> tuple[list[Document], list[FailedDoc]]:
    """Extract a batch of documents; failures are returned, never raised (one bad file never stops a run).

    A plain function of (config, batch) so Prefect can map it over batches on any task runner,
    Dask workers in other processes included; each process keeps one extractor and cache connection.
    """
    extractor = _extractor(cfg)
    cache_path = Layout(cfg).extract_cache
    cache = _EXTRACT_CACHES.get(str(cache_path))
    if cache is None:
        cache = _EXTRACT_CACHES[str(cache_path)] = ExtractCache(cache_path)
    docs: list[Document] = []
    failed: list[FailedDoc] = []
    ckey = extractor.cache_key
    for src in batch:
        try:
            cached = cache.get(src.sha256, ckey, src.doc_id) if src.format != "beir" else None
            if cached is not None:
                docs.append(cached)
                continue
            doc = extractor.extract(src)
            doc.extractor = extractor_key(cfg, src)
            if src.format != "beir":
                cache.put(doc, ckey)
            docs.append(doc)
        except ExtractionError as exc:
            failed.append(FailedDoc(src.doc_id, "extract", str(exc)))
        except Exception as exc:  # a library crash on one file: record it, go on
            failed.append(FailedDoc(src.doc_id, "extract", f"{type(exc).__name__}: {exc}"))
    return docs, failed
