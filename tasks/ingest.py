"""Prefect tasks for ingestion: thin wrappers over ``retrieval.ingest.pipeline`` (no logic lives here).

``IngestPipeline.run`` owns the stage sequence; ``run_stage`` runs each stage as a named task in the
flow's process, and ``map_extract`` maps extraction over batches — a pure function of (config, batch),
so it also runs on Dask workers in other processes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prefect import task, unmapped
from prefect.cache_policies import NONE
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Document, FailedDoc, SourceDoc
from ragrig.retrieval.ingest.extract import extract_sources

# retries only where a retry can help: a stage that talks to Chroma (possibly over HTTP)
RETRIES = {"build-index": 2, "sweep-leftovers": 2}
TAGS = {"embed": ["ragrig-embedding"]}


@task(name="extract", cache_policy=NONE, retries=1, retry_delay_seconds=1)
def extract_task(cfg: RagrigConfig, batch: list[SourceDoc]) -> tuple[list[Document], list[FailedDoc]]:
    return extract_sources(cfg, batch)


def run_stage(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run one pipeline stage as a Prefect task named after it."""
    t = task(fn, name=name, cache_policy=NONE, retries=RETRIES.get(name, 0), retry_delay_seconds=[1, 4],
             tags=TAGS.get(name, []))
    return t(*args)


def map_extract(cfg: RagrigConfig, batches: list[list[SourceDoc]]) -> Iterator[tuple[list[Document], list[FailedDoc]]]:
    """Submit every batch at once (the task runner decides the parallelism), yield results in order."""
    futures = extract_task.map(unmapped(cfg), batches) if batches else []
    for fut in futures:
        yield fut.result()
