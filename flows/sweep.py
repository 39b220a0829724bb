"""The ``sweep`` Prefect flow: each ingest (one per distinct ingestion config), evaluation and MLflow log of
``eval.sweep.run.run_sweep`` runs as a task; the sequence itself lives in the library. With ``flow.runner:
dask`` the configs' evaluations are Dask tasks on the cluster instead (``flows/runners.cluster_executor``); the
ingests and the parent MLflow run stay in the flow."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from ragrig.eval.sweep.run import run_sweep
from ragrig.eval.sweep.spec import Resolved, load_sweep, resolve
from ragrig.eval.sweep.summary import summary_markdown
from ragrig.flows.runners import cluster_executor
from ragrig.tasks.executor import PrefectTasks


@flow(name="sweep", log_prints=False)
def sweep_flow(sweep_path: str, overrides: list[str] | None = None, progress: bool = False,
               configs: Resolved | None = None) -> dict[str, Any]:
    """Run the sweep file ``sweep_path``. ``configs``: its configs, already resolved (the CLI's); else
    resolved here from the file and ``overrides`` (deployments)."""
    spec = load_sweep(sweep_path)
    configs = configs if configs is not None else resolve(spec, overrides)
    # flow.runner dask: each config's evaluation a Dask task on the cluster, the steps Prefect tasks here
    with cluster_executor(configs[0][2], steps=PrefectTasks()) as executor:
        result = run_sweep(spec, overrides, progress=progress, executor=executor, configs=configs)
    create_markdown_artifact(key=f"sweep-{spec.name}".lower().replace("_", "-")[:60], markdown=summary_markdown(result),
                             description=f"ragrig sweep {spec.name}")
    return result.to_dict()
