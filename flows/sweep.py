"""The ``sweep`` Prefect flow: each ingest (one per distinct ingestion config), evaluation and MLflow log of
``eval.sweep.run.run_sweep`` runs as a task; the sequence itself lives in the library."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from ragrig.eval.sweep.run import run_sweep
from ragrig.eval.sweep.spec import Resolved, load_sweep
from ragrig.eval.sweep.summary import summary_markdown
from ragrig.tasks.stages import run_stage


@flow(name="sweep", log_prints=False)
def sweep_flow(sweep_path: str, overrides: list[str] | None = None, progress: bool = False,
               configs: Resolved | None = None) -> dict[str, Any]:
    """Run the sweep file ``sweep_path``. ``configs``: its configs, already resolved (the CLI's); else
    resolved here from the file and ``overrides`` (deployments)."""
    spec = load_sweep(sweep_path)
    result = run_sweep(spec, overrides, progress=progress, stage=run_stage, configs=configs)
    create_markdown_artifact(key=f"sweep-{spec.name}".lower().replace("_", "-")[:60], markdown=summary_markdown(result),
                             description=f"ragrig sweep {spec.name}")
    return result.to_dict()
