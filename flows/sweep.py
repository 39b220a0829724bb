"""The ``sweep`` Prefect flow: each ingest (one per distinct ingestion config), evaluation and MLflow
log of ``eval.sweep.run_sweep`` runs as a task; the sequence itself lives in the library."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE
from ragrig.eval.sweep import load_sweep, run_sweep, summary_markdown


def run_stage(name: str, fn: Any, *args: Any) -> Any:
    return task(fn, name=name, cache_policy=NONE)(*args)


@flow(name="sweep", log_prints=False)
def sweep_flow(sweep_path: str, overrides: list[str] | None = None, progress: bool = False) -> dict[str, Any]:
    spec = load_sweep(sweep_path)
    result = run_sweep(spec, overrides, progress=progress, stage=run_stage)
    create_markdown_artifact(key=f"sweep-{spec.name}".lower().replace("_", "-")[:60], markdown=summary_markdown(result),
                             description=f"ragrig sweep {spec.name}")
    return result.to_dict()
