"""The ``ingest`` Prefect flow: discover -> plan -> partitions (extract + chunk, mapped over batches) -> embed ->
index -> publish; with ``flow.runner: dask`` the partitions run on the cluster and embed there too
(``retrieval/ingest/partitions.py``), the index built and published here.

Runs with Prefect's ephemeral API (no server needed) or as a deployment (prefect.yaml).
On publishing a new version it emits the ``ragrig.index.published`` event that the
evaluate deployment is triggered by.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.events import emit_event
from ragrig.configs.models import RagrigConfig
from ragrig.flows.params import flow_config
from ragrig.flows.render.ingest import ingest_markdown
from ragrig.flows.runners import task_runner_for
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.tasks.executor import PrefectTasks

PUBLISHED_EVENT = "ragrig.index.published"


def _ingest(cfg: RagrigConfig, force: bool, progress: bool, wait_s: float = 0.0) -> dict[str, Any]:
    pipe = IngestPipeline(cfg, force=force, progress=progress)
    tasks = PrefectTasks(distributed=cfg.flow.runner == "dask")  # dask: the partitions (and their embed) there
    return pipe.run(tasks, wait_s=wait_s).to_dict()


@flow(name="ingest", log_prints=False)
def ingest_flow(
    config_path: str | None = None,
    overrides: list[str] | None = None,
    force: bool = False,
    progress: bool = True,
    wait_s: float = 0.0,
    config: RagrigConfig | None = None,
) -> dict[str, Any]:
    """Ingest the configured corpus into a new index version (incremental unless ``force``). ``config``: already
    loaded (the CLI's); else loaded from ``config_path`` and ``overrides``, which the published event carries
    either way (the evaluate deployment it triggers loads the config from them)."""
    cfg = flow_config(config, config_path, overrides)
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
            resource={"prefect.resource.id": f"ragrig.index.{stats['index_key']}",
                      "ragrig.version": str(stats["version"])},
            payload={
                "config_path": config_path or "",
                "overrides": list(overrides or []),
                "version": stats["version"],
                "index_key": stats["index_key"],
            },
        )
    return stats


def run_ingest(
    cfg: RagrigConfig, config_path: str | None = None, overrides: list[str] | None = None, *, force: bool = False,
    progress: bool = True, wait_s: float = 0.0,
) -> dict[str, Any]:
    """Run the flow on the loaded ``cfg`` with the task runner it asks for (``config_path`` and ``overrides``:
    where it came from, for the published event)."""
    runner = task_runner_for(cfg)
    return ingest_flow.with_options(task_runner=runner)(
        config_path=config_path, overrides=list(overrides or []), force=force, progress=progress, wait_s=wait_s,
        config=cfg,
    )
