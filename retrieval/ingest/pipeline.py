"""Incremental, versioned ingestion: one sequence of stages under any executor (``retrieval/executor.py``: it
decides only where the partitions run, here, on Prefect's threads or on Dask workers; the version is the same).

sweep leftovers -> verify the published version (``current.py``: a damaged one is rebuilt) -> discover -> plan
(``plan.py``: diff by content sha256) -> stage the next version -> partitions of the new/changed documents
(``partitions.py``: extracted and chunked; on Dask also embedded, into shards), each spilled as it comes back ->
the version's two tables written once (``tables.py``: later stages read the rows from them) -> embed (``embed.py``:
every vector into the embedding cache) -> the fused views into the same cache (``views.py``) -> ``vectors.npy``
read back from it a block at a time, and the HNSW graph's shards (mapped like the partitions) -> build
(``build.py``) -> publish (atomic CURRENT switch) and prune (``index/publish.py``). Nothing changed and no
``--force``: no new version. A crash before the switch leaves the published version; the next ingest sweeps up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.index import publish
from ragrig.retrieval.index.files import ingest_lock
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.build import build_version, discard, staged_version, write_vector_files
from ragrig.retrieval.ingest.clock import StageClock
from ragrig.retrieval.ingest.current import verify_published
from ragrig.retrieval.ingest.discover import Discovery, corpus_kind, discover
from ragrig.retrieval.ingest.embed import cached_rows, ensure_cached
from ragrig.retrieval.ingest.extract import extractor_key
from ragrig.retrieval.ingest.partition import Mark
from ragrig.retrieval.ingest.partitions import run_partitions
from ragrig.retrieval.ingest.plan import (
    Plan,
    comparable_version,
    corpus_file_record,
    plan_changes,
    unchanged_beir,
)
from ragrig.retrieval.ingest.restore import restore_if_damaged
from ragrig.retrieval.ingest.stats import IngestStats
from ragrig.retrieval.ingest.tables import Column, StagedTables, columns, write_tables
from ragrig.retrieval.ingest.vector_rows import CachedRows, VectorRows
from ragrig.retrieval.ingest.views import embed_views, record_views, view_encoders, views_recorded

__all__ = ["IngestPipeline", "IngestStats"]


class IngestPipeline:
    def __init__(self, cfg: RagrigConfig, *, force: bool = False, progress: bool = False,
                 hook: Callable[[str], None] | None = None, worker_hook: Mark | None = None) -> None:
        self.cfg, self.force, self.progress = cfg, force, progress
        self.layout = Layout(cfg)
        self.stats = IngestStats(index_key=self.layout.key, index_dir=str(self.layout.index_dir))
        self.embedder = Embedder(cfg.embedding, memo_file=self.layout.cache_dir / "model-digests.json")
        self.clock = StageClock(self.stats, hook)  # the stages' seconds and boundaries (crash tests kill there)
        self.timed = self.clock.timed
        self._worker_hook = worker_hook  # called in Dask workers at points of a partition (fault tests)
        self._worker_embedded = 0  # texts the workers embedded (a distributed ingest)
        self._embed_cache: EmbeddingCache | None = None
        self._corpus_file: dict[str, Any] | None = None  # BEIR: the corpus file's hash and extractor
        self._kept: str | None = None  # the published version verified whole (None: none, --force, or damaged)

    def sweep_leftovers(self) -> list[str]:
        try:
            return publish.sweep_leftovers(self.layout, self.cfg.index.chroma)
        except Exception:
            if not self.restore_damaged_store():
                raise
        return publish.sweep_leftovers(self.layout, self.cfg.index.chroma)

    def restore_damaged_store(self) -> bool:
        """After an error from the embedded Chroma store: rebuilt when its file is damaged
        (``restore.restore_if_damaged``), with a warning saying so; False when it is not."""
        return restore_if_damaged(self.cfg, self.layout, self.embedder, self.embed_cache, self.stats)

    def embed_cache(self) -> EmbeddingCache:
        """The embedding cache, opened on first use (closed with the run)."""
        if self._embed_cache is None:
            self._embed_cache = EmbeddingCache(self.layout.embedding_cache)
        return self._embed_cache

    def verify_current(self) -> str | None:
        """The published version this run may diff against and keep (``current.verify_published``; none under
        ``--force``)."""
        with self.timed("verify"):
            current = verify_published(self.cfg, self.layout, self.stats, self.restore_damaged_store)
            self._kept = None if self.force else current
            return self._kept

    def discover(self) -> Discovery:
        with self.timed("discover"):
            kind = corpus_kind(self.cfg.corpus)  # clear error for a missing corpus before anything else
            if kind == "beir":  # the file's record goes into the manifest of the version this run builds
                self._corpus_file = corpus_file_record(self.cfg)
                same = unchanged_beir(self._corpus_file, self._previous(self._kept), self.stats)
                if same is not None:
                    return same
            found = discover(self.cfg.corpus)
            for f in found.failed:
                self.stats.fail(f.doc_id, f.stage, f.reason)
            for rel, why in found.not_regular:
                self.stats.warnings.append(f"{rel}: {why}")
            self.stats.docs_seen = len(found.docs) + len(found.failed)
        return found

    def _previous(self, version: str | None) -> IndexVersion | None:
        """The published version to diff against (``plan.comparable_version``; none with ``--force``)."""
        return None if self.force else comparable_version(self.cfg, self.layout, version, self.embedder.id, self.stats)

    def plan(self, found: Discovery) -> Plan:
        with self.timed("plan"):
            current = self._kept
            previous = self._previous(current)
            plan = plan_changes(found.docs, previous, self.stats.failed_ids(), lambda src: extractor_key(self.cfg, src))
            self.stats.docs_new, self.stats.docs_changed = plan.new, plan.changed
            self.stats.docs_unchanged, self.stats.docs_removed = len(plan.reused), len(plan.removed)
            self.stats.previous_version = current
            if not found.docs and not self.stats.failures:  # an empty (or unmounted) corpus never empties an index
                raise InputError(f"corpus.path: no documents in {self.cfg.corpus.path} (corpus.include: "
                                 f"{', '.join(self.cfg.corpus.include)}): nothing to index; a published version is "
                                 "kept as it is (`ragrig reset` removes an index)")
            return plan

    def partition(self, plan: Plan, staged: tuple[str, Path], executor: Executor,
                  ) -> tuple[StagedTables | None, set[str] | None]:
        """The new and changed documents extracted and chunked in partitions (``partitions.run_partitions``; on Dask
        workers embedded too), then the version's tables (``tables.write_tables``; None: every document to extract
        failed and none was removed) and the chunk ids the workers wrote to its collection (None: the build writes
        it); the plan's records are dropped then."""
        with self.timed("partitions"):
            done = run_partitions(self.cfg, self.layout, plan.to_extract, staged, executor, embedder=self.embedder,
                                  stats=self.stats, cache=self.embed_cache(), hook=self._worker_hook,
                                  progress=self.progress)
            self._worker_embedded = done.embedded
            if plan.only_failures(len(done.spill)):
                done.spill.close()
                return None, None
            tables = write_tables(staged[1], plan, done.spill, self.stats.failed_ids(after_discover=True))
            plan.forget_sources()
            return tables, done.in_collection

    def embed(self, chunks: Sequence[Chunk]) -> CachedRows:
        """Every vector into the embedding cache; the build steps read the rows from it (``vector_rows.py``)."""
        with self.timed("embed"):
            shas, tokens = columns(chunks, "sha256", "tokens")
            new = ensure_cached(self.embedder, self.embed_cache(), Column(chunks, "search_text"), shas, tokens=tokens,
                                progress=self.progress, warn=self.stats.warnings.append)
            # a distributed ingest's chunks were embedded by its workers (here: cache hits, put there by the merge)
            self.stats.chunks_embedded = new + self._worker_embedded
            self.stats.chunks_cached = len(set(shas)) - self.stats.chunks_embedded
            return cached_rows(self.embedder, self.embed_cache(), shas)

    @cached_property
    def views(self) -> dict[str, Embedder]:
        """The encoders of the views this config fuses (``ingest/views.py``)."""
        return view_encoders(self.cfg.retrieval, self.embedder, self.cfg.embedding,
                             self.layout.cache_dir / "model-digests.json")

    def embed_all(self, chunks: Sequence[Chunk]) -> CachedRows:
        """The index's vectors, then every view's, in one step: one task under the embedding tag's concurrency
        limit (``tasks/stages.py``) instead of two. Each tagged task asks the server for the slot; a Prefect
        server on SQLite that is busy writing events answers that with a 503, retried 2-5 s later (seen in
        ``tests/ops/test_prefect_deploy.py``), and a config without views ran an empty task."""
        vectors = self.embed(chunks)
        self.embed_views(chunks)
        return vectors

    def embed_views(self, chunks: Sequence[Chunk]) -> None:
        """The views this config fuses into the embedding cache: a reader only reads them."""
        if self.views:
            with self.timed("views"):
                self.stats.views_embedded = embed_views(chunks, self.views, self.layout.embedding_cache,
                                                        progress=self.progress, warn=self.stats.warnings.append)

    def vector_files(self, staged: tuple[str, Path], vectors: VectorRows, executor: Executor) -> dict[str, Any]:
        """``vectors.npy`` and the HNSW graph's shards, mapped like the partitions (``build.write_vector_files``)."""
        with self.timed("vectors"):
            return {"hnsw": write_vector_files(self.cfg, staged[1], vectors, vectors.dim, executor)}

    def build(self, tables: StagedTables, vectors: VectorRows, staged: tuple[str, Path],
              in_collection: set[str] | None, vector_files: dict[str, Any]) -> str:
        """The rest of the staged version (its tables are written) and, where one is written, its Chroma collection;
        returns its name (not yet published). ``in_collection``: the chunk ids a distributed ingest's workers wrote
        to the version's collection; ``vector_files``: ``vector_files``'s."""
        with self.timed("index"):
            # BEIR: the file this version was built from, and what failed in it
            corpus_file = self._corpus_file and {**self._corpus_file, "failed": list(self.stats.failures)}
            return build_version(self.cfg, self.layout, tables.docs, tables.chunks, vectors, model_id=self.embedder.id,
                                 dim=vectors.dim, corpus_kind=corpus_kind(self.cfg.corpus), corpus_file=corpus_file,
                                 mark=self.clock.mark, staged=staged, in_collection=in_collection,
                                 vector_files=vector_files, offsets=tables.chunks.offsets)

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

    def _keep_previous(self, version: str | None) -> IngestStats:
        """Nothing to publish: the run ends on the version already published."""
        assert version is not None
        self.stats.version, kept = version, IndexVersion(self.cfg, self.layout, version)
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
                    tables, in_collection = self.partition(plan, staged, executor)
                    if tables is None:
                        discard(self.cfg, self.layout, *staged)
                        return self._keep_previous(plan.previous)
                    vectors = call("embed", self.embed_all, tables.chunks)
                    self.stats.chunks = len(tables.chunks)
                    files = self.vector_files(staged, vectors, executor)
                    version = call("build-index", self.build, tables, vectors, staged, in_collection, files)
                call("publish", self.publish, version)
                return self.stats
        finally:
            self.stats.seconds["total"] = round(time.perf_counter() - t0, 3)
            self.close()
