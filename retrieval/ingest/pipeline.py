"""Incremental, versioned ingestion: one sequence of stages under any executor, each a method Prefect can wrap
as a task.

sweep leftovers -> verify the published version (``index/verify.py``: a damaged one is rebuilt, not kept)
-> discover -> plan (``plan.py``: diff against the published version by content sha256) -> stage the next
version -> partitions of the new/changed documents (``partitions.py``: extracted through the extraction cache
and chunked, ``chunking.py``; on Dask workers also embedded into shards) -> embed (embedding cache:
``embed.py``; after Dask workers, cache hits) -> the fused views into the same cache (``views.py``) -> build
the new version (``build.py``) -> publish (atomic CURRENT switch) and prune old versions (``index/publish.py``).
Nothing changed and no ``--force``: no new version is built (a view fused since is embedded). A crash before
the switch leaves the published version untouched; the next ingest sweeps leftovers.

The executor (``retrieval/executor.py``) decides only where the partitions run: in this process, on Prefect's
threads, or on Dask workers (``executor.distributed``); the version is the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.index import publish
from ragrig.retrieval.index.files import ingest_lock
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.build import build_version, discard, staged_version
from ragrig.retrieval.ingest.current import damage, outdated
from ragrig.retrieval.ingest.discover import Discovery, corpus_kind, discover
from ragrig.retrieval.ingest.embed import embed_with_cache
from ragrig.retrieval.ingest.extract import extractor_key
from ragrig.retrieval.ingest.partition import Mark
from ragrig.retrieval.ingest.partitions import run_partitions
from ragrig.retrieval.ingest.plan import Plan, assemble, corpus_file_record, plan_changes, unchanged_corpus_file
from ragrig.retrieval.ingest.restore import restore_store, store_damage
from ragrig.retrieval.ingest.stats import IngestStats
from ragrig.retrieval.ingest.views import embed_views, record_views, view_encoders, views_recorded

__all__ = ["IngestPipeline", "IngestStats"]

log = logging.getLogger(__name__)


class IngestPipeline:
    def __init__(
        self,
        cfg: RagrigConfig,
        *,
        force: bool = False,
        progress: bool = False,
        hook: Callable[[str], None] | None = None,
        worker_hook: Mark | None = None,
    ) -> None:
        self.cfg = cfg
        self.force = force
        self.progress = progress
        self.layout = Layout(cfg)
        self.stats = IngestStats(index_key=self.layout.key, index_dir=str(self.layout.index_dir))
        self.embedder = Embedder(cfg.embedding, memo_file=self.layout.cache_dir / "model-digests.json")
        self._hook = hook  # called at stage boundaries (crash tests kill the process there)
        self._worker_hook = worker_hook  # called in Dask workers at points of a partition (fault tests)
        self._worker_embedded = 0  # texts the workers embedded (a distributed ingest)
        self._embed_cache: EmbeddingCache | None = None
        self._corpus_file: dict[str, Any] | None = None  # BEIR: the corpus file's hash and extractor
        self._kept: str | None = None  # the published version verified whole (None: none, --force, or damaged)
        self._part_t0 = 0.0  # when the index build's last part ended

    def _mark(self, point: str) -> None:
        """A point of the run: the index build's parts ("index:tables", "index:bm25" with the keyword library,
        "index:vectors" with the graph, "index:chroma") are timed from one to the next; then the hook."""
        if point == "before:index" or point.startswith("index:"):
            now = time.perf_counter()
            if point.startswith("index:"):
                self.stats.add_seconds(point, now - self._part_t0)
            self._part_t0 = now
        if self._hook:
            self._hook(point)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        self._mark(f"before:{stage}")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stats.add_seconds(stage, time.perf_counter() - t0)
        log.info("ingest stage %s: %.3f s", stage, self.stats.seconds[stage],
                 extra={"ragrig": self.stats.stage_event(stage)})
        self._mark(f"after:{stage}")

    # ---- stages -------------------------------------------------------------
    def sweep_leftovers(self) -> list[str]:
        try:
            return publish.sweep_leftovers(self.layout, self.cfg.index.chroma)
        except Exception:
            if not self.restore_damaged_store():
                raise
        return publish.sweep_leftovers(self.layout, self.cfg.index.chroma)

    def restore_damaged_store(self) -> bool:
        """After an error from the embedded Chroma store: when its SQLite file is damaged, move it aside and
        rebuild every published version's collection from the version's chunks and the embedding cache
        (``ingest/restore.py``), with a warning saying so. False when the store is not damaged (the error is
        something else)."""
        if self.cfg.index.chroma.mode != "embedded":
            return False
        damage = store_damage(self.layout.chroma_dir)
        if damage is None:
            return False
        if self._embed_cache is None:
            self._embed_cache = EmbeddingCache(self.layout.embedding_cache)
        done = restore_store(self.cfg, self.layout, self.embedder, self._embed_cache)
        note = done.summary(self.layout.chroma_dir, damage)
        self.stats.warnings.append(note)
        log.warning("index %s: %s", self.layout.key, note)
        return True

    def verify_current(self) -> str | None:
        """The published version this run may diff against and keep, checked against its manifest (file hashes,
        counts, the Chroma collection, its stored vectors' values as ``health`` checks them): None when there is
        none, under ``--force``, or when it is damaged (a CURRENT naming a missing version, a garbage manifest,
        a truncated table, a deleted store, NaN or zero vector rows an earlier build published), in which
        case this run rebuilds it from the corpus (the caches make that cheap) and says so."""
        with self.timed("verify"):
            current = self.layout.current_version()
            if current is None:
                if self.layout.current_file.exists():
                    self._repair("CURRENT", f"{self.layout.current_file} does not name a version")
                return None
            problem = damage(self.cfg, self.layout, current, self.restore_damaged_store)
            if problem:
                self._repair(current, problem)
                return None
            why = outdated(self.cfg, self.layout, current)
            if why:
                self.stats.warnings.append(f"published version {current} {why}: writing a new version "
                                           "(unchanged chunks come from the embedding cache)")
                log.warning("index %s: %s %s; writing a new version", self.layout.key, current, why)
                return None
            self._kept = None if self.force else current
            return self._kept

    def _repair(self, version: str, problem: str) -> None:
        self.stats.repaired = version
        self.stats.warnings.append(f"published version {version} is damaged ({problem}): rebuilding it from the "
                                   "corpus (unchanged documents come from the caches)")
        log.warning("index %s: %s is damaged (%s); rebuilding", self.layout.key, version, problem)

    def discover(self) -> Discovery:
        with self.timed("discover"):
            kind = corpus_kind(self.cfg.corpus)  # clear error for a missing corpus before anything else
            if kind == "beir":
                same = self._unchanged_beir_file()
                if same is not None:
                    return same
            found = discover(self.cfg.corpus)
            for f in found.failed:
                self.stats.fail(f.doc_id, f.stage, f.reason)
            for rel, why in found.not_regular:
                self.stats.warnings.append(f"{rel}: {why}")
            self.stats.docs_seen = len(found.docs) + len(found.failed)
        return found

    def _unchanged_beir_file(self) -> Discovery | None:
        """A BEIR corpus file identical to the one the current version was built from: nothing to parse.
        Else None, and the file's record is kept for the manifest of the version this run builds."""
        self._corpus_file = corpus_file_record(self.cfg)
        previous = self._kept
        kept = self._previous(previous)
        if kept is None:
            return None
        manifest = kept.manifest
        failed = unchanged_corpus_file(self._corpus_file, manifest)
        if failed is None:
            return None
        for f in failed:
            self.stats.fail(f["doc_id"], f["stage"], f["reason"])
        docs = int(manifest["counts"]["documents"])
        self.stats.docs_seen = docs + len(failed)
        self.stats.docs_unchanged = docs
        self.stats.previous_version = previous
        return Discovery(unchanged_since=previous)

    def _previous(self, version: str | None) -> IndexVersion | None:
        """The published version to diff against: none with ``--force``, nor when its vectors came from another
        model than the one configured now (new weights at the same path, another package release): then every
        chunk is chunked and embedded again, so one index never mixes two embedding spaces."""
        if version is None or self.force:
            return None
        previous = IndexVersion(self.cfg, self.layout, version)
        if previous.model_id != self.embedder.id:
            note = (f"the embedding model changed since {version} ({previous.model_id} -> {self.embedder.id}): "
                    "every chunk is embedded again")
            if note not in self.stats.warnings:
                log.warning(note)
                self.stats.warnings.append(note)
            return None
        return previous

    def plan(self, found: Discovery) -> Plan:
        with self.timed("plan"):
            current = self._kept
            previous = self._previous(current)
            plan = plan_changes(found.docs, previous, self.stats.failed_ids(), lambda src: extractor_key(self.cfg, src))
            self.stats.docs_new, self.stats.docs_changed = plan.new, plan.changed
            self.stats.docs_unchanged = len(plan.reused)
            self.stats.docs_removed = len(plan.removed)
            self.stats.previous_version = current
            if not found.docs and not self.stats.failures:  # an empty (or unmounted) corpus never empties an index
                raise InputError(f"corpus.path: no documents in {self.cfg.corpus.path} (corpus.include: "
                                 f"{', '.join(self.cfg.corpus.include)}): nothing to index; a published version is "
                                 "kept as it is (`ragrig reset` removes an index)")
            return plan

    def partition(self, plan: Plan, staged: tuple[str, Path], executor: Executor,
                  ) -> tuple[list[Document], list[Chunk], set[str] | None]:
        """The new and changed documents extracted and chunked in partitions (``partitions.run_partitions``;
        on Dask workers embedded too): the extracted documents, their chunks, and the chunk ids the workers
        wrote to the version's collection (None: the build writes the collection)."""
        with self.timed("partitions"):
            if self._embed_cache is None:
                self._embed_cache = EmbeddingCache(self.layout.embedding_cache)
            done = run_partitions(self.cfg, self.layout, plan.to_extract, staged, executor, embedder=self.embedder,
                                  stats=self.stats, cache=self._embed_cache, hook=self._worker_hook,
                                  progress=self.progress)
            self._worker_embedded = done.embedded
            return done.docs, done.chunks, done.in_collection

    def embed(self, chunks: list[Chunk]) -> np.ndarray:
        with self.timed("embed"):
            if self._embed_cache is None:
                self._embed_cache = EmbeddingCache(self.layout.embedding_cache)
            vecs, new = embed_with_cache(self.embedder, self._embed_cache, [c.search_text for c in chunks],
                                         [c.sha256 for c in chunks], tokens=[c.tokens for c in chunks],
                                         progress=self.progress, warn=self.stats.warnings.append)
            # a distributed ingest's chunks were embedded by its workers (here: cache hits, put there by the merge)
            self.stats.chunks_embedded = new + self._worker_embedded
            self.stats.chunks_cached = len({c.sha256 for c in chunks}) - self.stats.chunks_embedded
            return vecs

    @cached_property
    def views(self) -> dict[str, Embedder]:
        """The encoders of the views this config fuses (``ingest/views.py``)."""
        return view_encoders(self.cfg.retrieval, self.embedder, self.cfg.embedding,
                             self.layout.cache_dir / "model-digests.json")

    def embed_views(self, chunks: list[Chunk]) -> None:
        """The views this config fuses into the embedding cache: a reader only reads them."""
        if self.views:
            with self.timed("views"):
                self.stats.views_embedded = embed_views(chunks, self.views, self.layout.embedding_cache,
                                                        progress=self.progress, warn=self.stats.warnings.append)

    def build(self, docs: list[Document], chunks: list[Chunk], vectors: np.ndarray,
              staged: tuple[str, Path] | None = None, in_collection: set[str] | None = None) -> str:
        """Write a complete new version directory and Chroma collection; return its name (not yet published).
        ``staged``: the staging folder this run holds (None: one of its own); ``in_collection``: the chunk ids a
        distributed ingest's workers wrote to the version's collection."""
        with self.timed("index"):
            corpus_file = None
            if self._corpus_file is not None:  # BEIR: the file this version was built from, and what failed in it
                corpus_file = {**self._corpus_file, "failed": list(self.stats.failures)}
            dim = int(vectors.shape[1]) if len(chunks) else self.embedder.dim
            return build_version(self.cfg, self.layout, docs, chunks, vectors, model_id=self.embedder.id, dim=dim,
                                 corpus_kind=corpus_kind(self.cfg.corpus), corpus_file=corpus_file, mark=self._mark,
                                 staged=staged, in_collection=in_collection)

    def publish(self, version: str) -> None:
        with self.timed("publish"):
            publish.publish(self.layout, version)
            self.stats.version = version
            self.stats.published = True
            record_views(self.layout.views_file, version, self.views)  # what the views stage embedded
            pruned = publish.prune(self.layout, self.cfg.index)
            self.stats.kept_in_use = pruned.in_use
            if pruned.in_use:
                self.stats.warnings.append(f"kept {', '.join(pruned.in_use)} beyond index.keep_versions: a reader has "
                                           "it open (a later ingest prunes it once the reader lets go)")

    def close(self) -> None:
        if self._embed_cache is not None:
            self._embed_cache.close()

    # ---- the whole sequence (one place for it) ------------------------------
    def _keep_previous(self, version: str | None) -> IngestStats:
        """Nothing to publish: the run ends on the version already published."""
        assert version is not None
        self.stats.version = version
        kept = IndexVersion(self.cfg, self.layout, version)
        self.stats.chunks = kept.manifest["counts"]["chunks"]
        if self.views and not views_recorded(self.layout.views_file, version, self.views):  # weighted since
            self.embed_views(kept.chunks)
            record_views(self.layout.views_file, version, self.views)
        return self.stats

    def run(self, executor: Executor = IN_PROCESS, wait_s: float = 0.0) -> IngestStats:
        """Run every stage under the ingest lock, each through ``executor.call`` (a Prefect flow's executor runs
        it as a task), the partitions through ``executor.map``. After the plan the version is staged first (a
        distributed executor's workers write into it), and an error anywhere before it is complete removes it:
        the published version stays as it was."""
        call = executor.call
        corpus_kind(self.cfg.corpus)  # a missing corpus is an input error before anything is written
        t0 = time.perf_counter()
        try:
            with ingest_lock(self.layout.lock_file, wait_s=wait_s):
                call("sweep-leftovers", self.sweep_leftovers)
                call("verify-current", self.verify_current)
                found = call("discover", self.discover)
                if found.unchanged_since is not None:
                    return self._keep_previous(found.unchanged_since)
                plan = call("plan", self.plan, found)
                if plan.changed_nothing:
                    return self._keep_previous(plan.previous)
                with staged_version(self.cfg, self.layout) as staged:
                    extracted, new_chunks, in_collection = self.partition(plan, staged, executor)
                    if plan.only_failures(extracted):
                        discard(self.cfg, self.layout, *staged)
                        return self._keep_previous(plan.previous)
                    docs, chunks = assemble(plan, extracted, new_chunks, self.stats.failed_ids(after_discover=True))
                    vectors = call("embed", self.embed, chunks)
                    call("embed-views", self.embed_views, chunks)
                    self.stats.chunks = len(chunks)
                    version = call("build-index", self.build, docs, chunks, vectors, staged, in_collection)
                call("publish", self.publish, version)
                return self.stats
        finally:
            self.stats.seconds["total"] = round(time.perf_counter() - t0, 3)
            self.close()
