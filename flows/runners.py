"""The task runner is a config choice: threads (default) or Dask (a LocalCluster, or a scheduler address)."""

from __future__ import annotations

from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig


def task_runner_for(cfg: RagrigConfig) -> Any:
    if cfg.flow.task_runner == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=cfg.flow.max_workers)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:  # pragma: no cover - prefect-dask is a dependency
        raise InputError("flow.task_runner: dask needs prefect-dask (pip install prefect-dask)") from None
    if cfg.flow.dask_address:
        return DaskTaskRunner(address=cfg.flow.dask_address)
    return DaskTaskRunner(
        cluster_kwargs={"n_workers": cfg.flow.max_workers, "threads_per_worker": 1, "processes": True,
                        "dashboard_address": None, "host": "127.0.0.1"}
    )
