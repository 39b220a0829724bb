"""A partition of an ingest's changed documents, the one step every executor maps (the driver's side is
``partitions.py``):

- ``run_partition``, a Dask worker's share (an executor whose ``map`` runs in other processes): extracted,
  chunked and embedded in the worker's process, its tables and new vectors written as shard files into the
  staging folder of the version being built (``shards.py``), and only a small ``PartitionSummary`` (counts,
  failures, file hashes) sent back through the scheduler.
- ``chunk_partition``, in the driver's process (in order, or on Prefect's threads): extracted (into the
  extraction cache: the driver is the caches' one writer) and chunked, its documents and chunks handed back in
  memory, no shard file; the driver then embeds every partition's chunks at once, in the encoder's batches an
  ingest always had, so a local ingest's vectors are the same bits as before partitions.

A plain function of (config, job): the orchestrator maps it over the partitions (``executor.map``) and may
run it again after its worker died: it is idempotent (the same files, the same collection rows) and embeds
only what no earlier attempt embedded (``shards.ShardCache``). Each worker process keeps one encoder per
embedding config (loaded on its first partition) and one connection to the embedding cache.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.documents import Chunk, Document, FailedDoc, SourceDoc
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.format import add_chunks
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.chunk_stage import chunk_documents, chunking_params
from ragrig.retrieval.ingest.chunking import ChunkingParams
from ragrig.retrieval.ingest.embed import cached_rows, ensure_cached
from ragrig.retrieval.ingest.extract import extract_sources
from ragrig.retrieval.ingest.shards import PROBE, ShardCache, file_sums, make_part_dir, write_partition_tables

Mark = Callable[[str], None]
"""Called in the worker at points of a partition ("partition:chunked", "embedded:<n>" after each batch of n
new vectors is on disk, "partition:chroma"): the fault tests kill the worker there."""


@dataclass(frozen=True)
class PartitionJob:
    """What the scheduler carries to a worker (the sources: paths, or a BEIR record's text)."""

    index: int
    sources: list[SourceDoc]
    shards: str  # the staging folder's shards/, on the home every worker shares
    token: str  # what shards/probe holds
    model_id: str  # the driver's embedding model id: a worker whose model differs refuses
    collection: str | None = None  # Chroma (http) collection this partition writes its vectors to


@dataclass
class PartitionSummary:
    """What a worker sends back: counts, failures, warnings and its files' sha256, never documents or vectors."""

    index: int
    host: str
    docs: int
    chunks: int
    embedded: int  # texts this attempt embedded (earlier attempts' batches and cache hits excluded)
    cached: int
    over_window: int
    failed: list[FailedDoc] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    tables: tuple[list[Document], list[Chunk]] | None = None  # in memory (``chunk_partition``); None: shard files


_EMBEDDERS: dict[tuple[str, str], Embedder] = {}
_CACHES: dict[str, EmbeddingCache] = {}


def worker_embedder(cfg: RagrigConfig) -> Embedder:
    """This process's encoder for the embedding config (loaded once, on first use)."""
    layout = Layout(cfg)
    key = (cfg.embedding.model_dump_json(), str(layout.cache_dir))
    embedder = _EMBEDDERS.get(key)
    if embedder is None:
        embedder = _EMBEDDERS[key] = Embedder(cfg.embedding, memo_file=layout.cache_dir / "model-digests.json")
    return embedder


def _main_cache(cfg: RagrigConfig) -> EmbeddingCache:
    path = Layout(cfg).embedding_cache
    cache = _CACHES.get(str(path))
    if cache is None or cache.stale:
        cache = _CACHES[str(path)] = EmbeddingCache(path)
    return cache


def check_shared(shards: Path, token: str) -> None:
    """The worker sees the staging folder the driver wrote, or one line saying the home is not shared."""
    probe = shards / PROBE
    try:
        why = None if probe.read_text().strip() == token else "it holds another ingest's token"
    except OSError as exc:
        why = exc.strerror or str(exc)
    if why is not None:
        raise InputError(f"the Dask worker on {socket.gethostname()} cannot read {probe} ({why}): with "
                         "flow.runner: dask the ragrig home must be on a filesystem every worker shares, "
                         "at the same path; nothing was published")


def run_partition(cfg: RagrigConfig, job: PartitionJob, mark: Mark | None = None) -> PartitionSummary:
    """Extract, chunk and embed ``job.sources``; write the shard files; return the summary."""
    mark = mark or (lambda point: None)
    shards = Path(job.shards)
    check_shared(shards, job.token)
    embedder = worker_embedder(cfg)
    if embedder.id != job.model_id:
        raise RagrigError(f"the Dask worker on {socket.gethostname()} has embedding model {embedder.id}, the "
                          f"ingest {job.model_id}: install the same model on every worker")
    params = chunking_params(cfg, embedder)
    part = extract_and_chunk(cfg, job.sources, embedder, params, store=False)  # the driver writes the cache
    docs, chunks = part.docs, part.chunks
    t1 = time.perf_counter()
    out = make_part_dir(shards, job.index)
    write_partition_tables(out, docs, chunks)
    t2 = time.perf_counter()
    seconds = {**part.seconds, "chunk": part.seconds["chunk"] + t2 - t1}  # the shard tables count as chunking
    warnings = part.warnings
    mark("partition:chunked")
    cache, shas = ShardCache(out, _main_cache(cfg)), [c.sha256 for c in chunks]
    new = ensure_cached(embedder, cache, [c.search_text for c in chunks], shas, tokens=[c.tokens for c in chunks],
                        chunk_size=cfg.embedding.batch_size,  # a killed worker loses one batch at most
                        on_batch=lambda n: mark(f"embedded:{n}"), warn=warnings.append)
    t3 = time.perf_counter()
    seconds["embed"] = t3 - t2
    if job.collection is not None and chunks:
        mark("partition:chroma")
        write_collection(cfg, job, chunks, cached_rows(embedder, cache, shas).array())
        seconds["chroma"] = time.perf_counter() - t3
    return PartitionSummary(
        index=job.index, host=socket.gethostname(), docs=len(docs), chunks=len(chunks), embedded=new,
        cached=len({c.sha256 for c in chunks}) - new, over_window=part.over_window, failed=part.failed,
        warnings=warnings, files=file_sums(shards, out), seconds={k: round(v, 3) for k, v in seconds.items()},
    )


_CHUNKING = threading.Lock()


@dataclass
class Extracted:
    """A partition's sources extracted and chunked: what both kinds of partition start from."""

    docs: list[Document]
    chunks: list[Chunk]
    failed: list[FailedDoc]  # extraction's failures, then chunking's
    warnings: list[str]
    over_window: int  # chunks longer than the encoder's window (cut when embedded)
    seconds: dict[str, float]  # extract, chunk


def extract_and_chunk(cfg: RagrigConfig, sources: list[SourceDoc], embedder: Embedder, params: ChunkingParams,
                      *, store: bool) -> Extracted:
    """Extract ``sources`` (into the extraction cache when ``store``: only the driver writes it) and chunk them
    with ``embedder``'s token counter, one thread at a time (a tokenizer is not safe to share between threads:
    Prefect's, or a Dask worker's)."""
    t0 = time.perf_counter()
    docs, failed = extract_sources(cfg, sources, store=store)
    t1 = time.perf_counter()
    warnings: list[str] = []
    with _CHUNKING:
        chunks, unchunked = chunk_documents(docs, params, embedder, warnings.append)
    t2 = time.perf_counter()
    return Extracted(docs, chunks, [*failed, *unchunked], warnings,
                     sum(1 for c in chunks if c.tokens > params.max_tokens), {"extract": t1 - t0, "chunk": t2 - t1})


def chunk_partition(cfg: RagrigConfig, index: int, sources: list[SourceDoc], embedder: Embedder,
                    params: ChunkingParams) -> PartitionSummary:
    """Extract and chunk ``sources`` in this process; the summary carries the documents and chunks (``tables``).
    ``embedder`` and ``params``: the driver's (its token counter, loaded before the partitions run)."""
    part = extract_and_chunk(cfg, sources, embedder, params, store=True)
    return PartitionSummary(
        index=index, host=socket.gethostname(), docs=len(part.docs), chunks=len(part.chunks), embedded=0, cached=0,
        over_window=part.over_window, failed=part.failed, warnings=part.warnings,
        seconds={k: round(v, 3) for k, v in part.seconds.items()}, tables=(part.docs, part.chunks),
    )


def write_collection(cfg: RagrigConfig, job: PartitionJob, chunks: list[Chunk], vecs: np.ndarray) -> None:
    """The partition's vectors into the version's collection on the Chroma server, in batches, as upserts (a
    retried partition writes the same rows again). A server that fails is one line naming it."""
    ccfg = cfg.index.chroma
    path = Layout(cfg).chroma_dir
    try:
        client = chroma.chroma_client(ccfg, path)
        col = client.get_collection(job.collection, embedding_function=None)
        add_chunks(col, chunks, vecs, upsert=True)
    except Exception as exc:
        chroma.forget_client(ccfg, path)  # a retry connects afresh
        first = (str(exc).strip().splitlines() or [""])[0]
        raise RagrigError(f"Chroma server http://{ccfg.host}:{ccfg.port} failed while a Dask worker wrote "
                          f"{len(chunks)} vectors to {job.collection}: {type(exc).__name__}: {first}; "
                          "nothing was published") from None
