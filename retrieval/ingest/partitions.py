"""The driver's side of an ingest's partitions (the partitions themselves are ``partition.py``), under any
executor: the changed documents cut into partitions of ``flow.extract_batch`` in plan order, mapped through
``executor.map("partition", …)``, and merged back in partition order with one stats path, one progress bar and
one failure order, so the new version's documents, chunks (ids, order, text) and vectors are the same whoever
ran them.

- In this process (``IN_PROCESS``, Prefect tasks on threads): ``chunk_partition`` extracts and chunks, and hands
  the documents and chunks back in memory; the driver embeds them all afterwards.
- In other processes (Dask workers): ``run_partition`` also embeds, and writes shard files into the staging
  folder; the probe tells a worker whether it shares the home; the merge reads the shards and is where what the
  workers extracted and embedded enters the SQLite caches: the driver is their one writer (``shards.ShardCache``
  says why), and the version's vectors are then read back through the embedding cache exactly as a local ingest
  reads them.

BM25, the keyword library, ``vectors.npy`` and the publish switch stay with the driver (``build.py``,
``IngestPipeline``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ragrig.configs.errors import RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.documents import Document, FailedDoc, SourceDoc
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.executor import Executor
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.format import collection_name
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.chunk_stage import chunking_params
from ragrig.retrieval.ingest.extract import remember_extractions
from ragrig.retrieval.ingest.partition import Mark, PartitionJob, PartitionSummary, chunk_partition, run_partition
from ragrig.retrieval.ingest.shards import (
    EMBEDDED,
    PROBE,
    SHARDS,
    check_files,
    part_dir,
    read_embedded,
    read_partition_tables,
)
from ragrig.retrieval.ingest.stats import IngestStats
from ragrig.retrieval.ingest.tables import TableSpill

def lost_cluster(exc: BaseException) -> bool:
    """Whether waiting on a partition raised because the scheduler cannot be reached or went away: a client
    that lost its scheduler cancels its futures; Dask's comm errors are OSErrors of its own; connection errors
    and timeouts. (An OSError a worker raised, a full disk say, reaches the driver as itself: not this.)"""
    return (isinstance(exc, (asyncio.CancelledError, concurrent.futures.CancelledError, TimeoutError,
                              ConnectionError))
            or (isinstance(exc, OSError) and type(exc).__module__.startswith("distributed")))


def partition_failed(cfg: RagrigConfig, exc: BaseException) -> RagrigError:
    """The one line for a partition that did not come back (the driver then removes the staged version)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    if lost_cluster(exc):
        where = cfg.flow.address or "the LocalCluster this ingest started"
        what = f"the Dask scheduler at {where} cannot be reached or went away"
    else:
        what = "a Dask worker failed on a partition"
    return RagrigError(f"{what} ({type(exc).__name__}: {first}); nothing was published, the published version is "
                       "unchanged")


@dataclass
class Partitioned:
    spill: TableSpill  # the extracted documents (plan order) and their chunks (document order), in the staging folder
    in_collection: set[str] | None  # chunk ids the workers wrote to the version's collection (None: none did)
    embedded: int  # distinct texts the workers embedded (every attempt's, once each)


def run_partitions(cfg: RagrigConfig, layout: Layout, sources: list[SourceDoc], staged: tuple[str, Path],
                   executor: Executor, *, embedder: Embedder, stats: IngestStats, cache: EmbeddingCache,
                   hook: Mark | None = None, progress: bool = False) -> Partitioned:
    """Extract and chunk ``sources`` in partitions of ``flow.extract_batch`` (``executor.map``), and merge each into
    the staging folder's spill as it comes back (``PartitionMerge``). A distributed executor's partitions embed
    too, each worker writing shards into the staging folder of ``staged`` (with ``index.chroma.mode: http``, and
    its vectors into the version's collection, which is created here first); ``hook``: called in the workers (the
    fault tests)."""
    version, folder = staged
    collection = None
    if executor.distributed:
        if cfg.index.chroma.mode == "http":
            collection = collection_name(layout.key, version)
            chroma.create_collection(chroma.chroma_client(cfg.index.chroma, layout.chroma_dir), collection,
                                     embedder.dim)
        jobs = partition_jobs(sources, folder, size=cfg.flow.extract_batch, model_id=embedder.id,
                              collection=collection)
        # the home as resolved here: a worker would resolve $RAGRIG_HOME (or ./.ragrig) in its own environment
        pinned = cfg.model_copy(update={"home": str(layout.home)})
        sizes = [len(job.sources) for job in jobs]
        results = executor.map("partition", run_partition, [(pinned, job, hook) for job in jobs])
    else:
        params = chunking_params(cfg, embedder)  # the model loaded here, before any partition runs
        parts = batches(sources, cfg.flow.extract_batch)
        sizes = [len(b) for b in parts]
        results = executor.map("partition", chunk_partition,
                               [(cfg, n, b, embedder, params) for n, b in enumerate(parts)])
    prefix = "workers:" if executor.distributed else ""  # seconds summed over processes that ran side by side
    merge = PartitionMerge(folder, stats, cache, embedder.id, TableSpill(folder),
                           remember=(lambda docs: remember_extractions(cfg, docs)) if executor.distributed else None,
                           collected=set() if collection is not None else None)
    bar = None
    if progress and sources:
        from tqdm import tqdm

        bar = tqdm(total=len(sources), desc="extract+chunk+embed" if executor.distributed else "extract+chunk",
                   unit="doc")
    try:
        for n, summary in zip(sizes, _came_back(cfg, executor, results)):
            for stage, seconds in summary.seconds.items():
                stats.add_seconds(f"{prefix}{stage}", seconds)
            merge.add(summary)
            if bar is not None:
                bar.update(n)
        embedded = merge.finish()
    except BaseException:  # an error or an interrupt: the staging folder goes (or is swept) with the spill
        merge.spill.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    return Partitioned(merge.spill, merge.collected, len(embedded))


def _came_back(cfg: RagrigConfig, executor: Executor, results: Iterator[PartitionSummary]
               ) -> Iterator[PartitionSummary]:
    """The partitions' results as they come back; on Dask, one that does not is ``partition_failed``'s line."""
    try:
        yield from results
    except (OSError, asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
        if not executor.distributed:
            raise
        raise partition_failed(cfg, exc) from None


def batches(sources: list[SourceDoc], size: int) -> list[list[SourceDoc]]:
    """``sources`` in partitions of ``size``, in plan order (the last one shorter)."""
    return [sources[i : i + size] for i in range(0, len(sources), size)]


def partition_jobs(sources: list[SourceDoc], staged: Path, *, size: int, model_id: str,
                   collection: str | None) -> list[PartitionJob]:
    """The documents to extract in partitions of ``size``, in plan order; writes the probe first."""
    shards = staged / SHARDS
    token = secrets.token_hex(16)
    write_atomic(shards / PROBE, token.encode(), durable=False)
    return [PartitionJob(index=n, sources=part, shards=str(shards), token=token, model_id=model_id,
                         collection=collection)
            for n, part in enumerate(batches(sources, size))]


class PartitionMerge:
    """The partitions' results, taken in partition order (the plan's; one that comes early waits for its turn):
    each one's documents and chunks appended to ``spill`` and dropped, its failures and warnings recorded in
    ``stats`` (every extraction failure and warning, then at ``finish`` every chunking one, as one pass over the
    documents records them); a partition's tables come in memory or from its shard files, each checked against
    the sha256 its worker reported before it is read. What the workers embedded goes into ``cache``; ``finish``
    returns the distinct texts (sha256) it holds: a text two partitions embedded, or an attempt killed before its
    retry, counts once, as a local ingest counts it, and removes the shards (no part of a version).
    ``remember``: called with each partition's documents (a distributed ingest's extraction cache);
    ``collected``: a set to add the chunk ids to (those the workers wrote to the version's collection)."""

    def __init__(self, staged: Path, stats: IngestStats, cache: EmbeddingCache, model_id: str, spill: TableSpill, *,
                 remember: Callable[[list[Document]], None] | None = None, collected: set[str] | None = None) -> None:
        self.shards, self.stats, self.cache, self.model_id, self.spill = staged / SHARDS, stats, cache, model_id, spill
        self.remember, self.collected = remember, collected
        self.embedded: set[str] = set()
        self.unchunked: list[FailedDoc] = []
        self.warnings: list[str] = []
        self.waiting: dict[int, PartitionSummary] = {}
        self.next = 0

    def add(self, summary: PartitionSummary) -> None:
        self.waiting[summary.index] = summary
        while self.next in self.waiting:
            self._merge(self.waiting.pop(self.next))
            self.next += 1

    def _merge(self, s: PartitionSummary) -> None:
        if s.tables is not None:
            part_docs, part_chunks = s.tables
            s.tables = None  # the spill holds them now
        else:
            check_files(self.shards, s.files, s.host)
            part_docs, part_chunks = read_partition_tables(part_dir(self.shards, s.index))
        if (len(part_docs), len(part_chunks)) != (s.docs, s.chunks):
            raise RagrigError(f"{part_dir(self.shards, s.index)}: holds {len(part_docs)} documents and "
                              f"{len(part_chunks)} chunks, its worker reported {s.docs} and {s.chunks}; nothing was "
                              "published")
        self.stats.record_extracted(part_docs, [f for f in s.failed if f.stage != "chunk"])
        self.unchunked += [f for f in s.failed if f.stage == "chunk"]
        self.warnings += s.warnings
        self.stats.chunks_over_window += s.over_window
        self.spill.add(part_docs, part_chunks)
        if self.remember is not None:
            self.remember(part_docs)
        if self.collected is not None:
            self.collected.update(c.chunk_id for c in part_chunks)
        for rel in sorted(r for r in s.files if Path(r).name.startswith(EMBEDDED)):
            file_model, shas, vecs = read_embedded(self.shards / rel)
            if file_model == self.model_id:
                self.cache.put_many(self.model_id, list(zip(shas, vecs)))
                self.embedded.update(shas)

    def finish(self) -> set[str]:
        if self.waiting:
            raise RagrigError(f"partition {self.next} never came back (later ones did: {sorted(self.waiting)}); "
                              "nothing was published")
        for f in self.unchunked:  # after every extraction failure and warning, as a local ingest records them
            self.stats.fail(f.doc_id, f.stage, f.reason)
        self.stats.warnings.extend(self.warnings)
        if self.shards.exists():  # a distributed ingest's
            shutil.rmtree(self.shards)
        return self.embedded
