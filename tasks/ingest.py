"""Prefect tasks for ingestion: thin wrappers over ``retrieval.ingest.pipeline`` (no logic lives here).

Stage tasks take the pipeline object and run in the flow's process; extraction is a pure function of
(config, batch) mapped over batches, so it also runs on Dask workers in other processes.
"""

from __future__ import annotations

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from configs.schema import RagrigConfig
from retrieval.ingest.corpus import Discovery
from retrieval.ingest.pipeline import IngestPipeline, Plan, extract_sources
from retrieval.types import Chunk, Document, FailedDoc, SourceDoc


@task(name="sweep-leftovers", cache_policy=NONE)
def sweep_task(pipe: IngestPipeline) -> list[str]:
    return pipe.sweep_leftovers()


@task(name="discover", cache_policy=NONE)
def discover_task(pipe: IngestPipeline) -> Discovery:
    return pipe.discover()


@task(name="plan", cache_policy=NONE)
def plan_task(pipe: IngestPipeline, found: Discovery) -> Plan:
    return pipe.plan(found)


@task(name="extract", cache_policy=NONE, retries=1, retry_delay_seconds=1)
def extract_task(cfg: RagrigConfig, batch: list[SourceDoc]) -> tuple[list[Document], list[FailedDoc]]:
    return extract_sources(cfg, batch)


@task(name="chunk", cache_policy=NONE)
def chunk_task(pipe: IngestPipeline, docs: list[Document]) -> list[Chunk]:
    return pipe.chunk(docs)


@task(name="embed", cache_policy=NONE, tags=["ragrig-embedding"])
def embed_task(pipe: IngestPipeline, chunks: list[Chunk]) -> np.ndarray:
    return pipe.embed(chunks)


@task(name="build-index", cache_policy=NONE)
def build_task(pipe: IngestPipeline, docs: list[Document], chunks: list[Chunk], vectors: np.ndarray) -> str:
    return pipe.build(docs, chunks, vectors)


@task(name="publish", cache_policy=NONE)
def publish_task(pipe: IngestPipeline, version: str) -> None:
    pipe.publish(version)
