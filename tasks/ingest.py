"""Prefect tasks for ingestion: thin wrappers over ``retrieval.ingest`` (no logic lives here).

``IngestPipeline.run`` owns the stage sequence and runs each stage through ``tasks.stages.run_stage``;
``map_extract`` maps extraction over batches, and with the Dask task runner ``map_partitions`` maps a
partition's extraction, chunking and embedding (``retrieval/ingest/partition.py``) over the workers — pure
functions of their arguments, so they run on Dask workers in other processes. A worker that dies mid-partition
is Dask's to reschedule (``distributed.scheduler.allowed-failures``); the partition is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterator

from prefect import unmapped
from prefect.utilities.annotations import quote
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Document, FailedDoc, SourceDoc
from ragrig.retrieval.ingest.extract import extract_sources
from ragrig.retrieval.ingest.partition import Mark, PartitionJob, PartitionSummary, run_partition
from ragrig.tasks.stages import as_task

extract_task = as_task("extract", extract_sources)
partition_task = as_task("partition", run_partition)


def map_extract(cfg: RagrigConfig, batches: list[list[SourceDoc]]) -> Iterator[tuple[list[Document], list[FailedDoc]]]:
    """Submit every batch at once (the task runner decides the parallelism), yield results in order. Each
    batch is ``quote``d, as ``run_stage`` quotes its arguments: Prefect would walk every document of it."""
    futures = extract_task.map(unmapped(cfg), [quote(b) for b in batches]) if batches else []  # not walked
    for fut in futures:
        yield fut.result()


def map_partitions(cfg: RagrigConfig, jobs: list[PartitionJob], mark: Mark | None = None,
                   ) -> Iterator[PartitionSummary]:
    """Submit every partition at once, yield the summaries in order (a lost scheduler is
    ``distributed.run_partitions``'s one line)."""
    # not quoted as extraction batches are: on the Dask task runner a quoted mapped argument reaches the
    # worker still wrapped (Prefect 3.x); the walk costs ~5 s per 100k documents here
    futures = partition_task.map(unmapped(cfg), jobs, unmapped(mark)) if jobs else []
    for fut in futures:
        yield fut.result()
