"""The ``ingest`` Prefect flow: discover -> plan -> extract (mapped over batches) -> chunk -> embed -> index -> publish.

Runs with Prefect's ephemeral API (no server needed) or as a deployment (prefect.yaml).
On publishing a new version it emits the ``ragrig.index.published`` event that the
evaluate deployment is triggered by.
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger, unmapped
from prefect.artifacts import create_markdown_artifact
from prefect.events import emit_event

from configs.schema import RagrigConfig, load_config
from flows.report import ingest_markdown
from flows.runners import task_runner_for
from retrieval.ingest.pipeline import IngestPipeline
from retrieval.store.layout import ingest_lock
from retrieval.store.version import IndexVersion
from tasks.ingest import (
    build_task,
    chunk_task,
    discover_task,
    embed_task,
    extract_task,
    plan_task,
    publish_task,
    sweep_task,
)

PUBLISHED_EVENT = "ragrig.index.published"


def _ingest(cfg: RagrigConfig, force: bool, progress: bool, wait_s: float = 0.0) -> dict[str, Any]:
    pipe = IngestPipeline(cfg, force=force, progress=progress)
    t0 = time.perf_counter()
    try:
        with ingest_lock(pipe.layout.lock_file, wait_s=wait_s):
            sweep_task(pipe)
            found = discover_task(pipe)
            plan = plan_task(pipe, found)
            if plan.changed_nothing and not force:
                pipe.stats.version = plan.previous
                pipe.stats.chunks = IndexVersion(cfg, pipe.layout, plan.previous).manifest["counts"]["chunks"]  # type: ignore[arg-type]
            else:
                size = cfg.flow.extract_batch
                batches = [plan.to_extract[i : i + size] for i in range(0, len(plan.to_extract), size)]
                t_ex = time.perf_counter()
                futures = extract_task.map(unmapped(cfg), batches) if batches else []
                bar = None
                if progress and plan.to_extract:
                    from tqdm import tqdm

                    bar = tqdm(total=len(plan.to_extract), desc="extract", unit="doc")
                docs = []
                for batch, fut in zip(batches, futures):
                    got, failed = fut.result()
                    pipe.record_extracted(got, failed)
                    docs.extend(got)
                    if bar is not None:
                        bar.update(len(batch))
                if bar is not None:
                    bar.close()
                pipe.stats.seconds["extract"] = round(time.perf_counter() - t_ex, 3)
                if pipe.only_failures(plan, docs):
                    pipe.stats.version = plan.previous
                    pipe.stats.chunks = IndexVersion(cfg, pipe.layout, plan.previous).manifest["counts"]["chunks"]  # type: ignore[arg-type]
                else:
                    new_chunks = chunk_task(pipe, docs)
                    all_docs, chunks = pipe.assemble(plan, docs, new_chunks)
                    vectors = embed_task(pipe, chunks)
                    pipe.stats.chunks = len(chunks)
                    version = build_task(pipe, all_docs, chunks, vectors)
                    publish_task(pipe, version)
    finally:
        pipe.stats.seconds["total"] = round(time.perf_counter() - t0, 3)
        pipe.close()
    return pipe.stats.to_dict()


@flow(name="ingest", log_prints=False)
def ingest_flow(
    config_path: str | None = None,
    overrides: list[str] | None = None,
    force: bool = False,
    progress: bool = True,
    wait_s: float = 0.0,
) -> dict[str, Any]:
    """Ingest the configured corpus into a new index version (incremental unless ``force``)."""
    cfg = load_config(config_path, overrides)
    stats = _ingest(cfg, force=force, progress=progress, wait_s=wait_s)
    logger = get_run_logger()
    logger.info(
        "ingest %s: %s docs, %s chunks (%s embedded), version %s%s",
        stats["index_key"], stats["docs_seen"], stats["chunks"], stats["chunks_embedded"], stats["version"],
        "" if stats["published"] else " (unchanged)",
    )
    create_markdown_artifact(key="ingest-summary", markdown=ingest_markdown(stats), description="ragrig ingest summary")
    if stats["published"]:
        emit_event(
            event=PUBLISHED_EVENT,
            resource={"prefect.resource.id": f"ragrig.index.{stats['index_key']}", "ragrig.version": str(stats["version"])},
            payload={
                "config_path": config_path,
                "overrides": list(overrides or []),
                "version": stats["version"],
                "index_key": stats["index_key"],
            },
        )
    return stats


def run_ingest(
    cfg_path: str | None, overrides: list[str], *, force: bool = False, progress: bool = True, wait_s: float = 0.0
) -> dict[str, Any]:
    """Run the flow with the task runner the config asks for."""
    cfg = load_config(cfg_path, overrides)  # validate before Prefect starts (fast, clear errors)
    runner = task_runner_for(cfg)
    return ingest_flow.with_options(task_runner=runner)(
        config_path=cfg_path, overrides=overrides, force=force, progress=progress, wait_s=wait_s
    )
