"""Prefect tasks for ingestion: thin wrappers over ``retrieval.ingest.pipeline`` (no logic lives here).

``IngestPipeline.run`` owns the stage sequence and runs each stage through ``tasks.stages.run_stage``;
``map_extract`` maps extraction over batches — a pure function of (config, batch), so it also runs on Dask
workers in other processes.
"""

from __future__ import annotations

from collections.abc import Iterator

from prefect import unmapped
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Document, FailedDoc, SourceDoc
from ragrig.retrieval.ingest.extract import extract_sources
from ragrig.tasks.stages import as_task

extract_task = as_task("extract", extract_sources)


def map_extract(cfg: RagrigConfig, batches: list[list[SourceDoc]]) -> Iterator[tuple[list[Document], list[FailedDoc]]]:
    """Submit every batch at once (the task runner decides the parallelism), yield results in order."""
    futures = extract_task.map(unmapped(cfg), batches) if batches else []
    for fut in futures:
        yield fut.result()
