"""The ``adapt`` Prefect flow: the pairs, the fine-tune, its MLflow run, and the comparison's ingests and
evaluations each run as a task (``tasks/executor.py``); the sequence itself lives in the library (``eval/adapt.py``)."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from ragrig.configs.models import RagrigConfig
from ragrig.eval.adapt import run_adapt
from ragrig.flows.params import flow_config
from ragrig.flows.render.adapt import adapt_markdown
from ragrig.flows.runners import task_runner_for
from ragrig.tasks.executor import PrefectTasks


@flow(name="adapt", log_prints=False)
def adapt_flow(config_path: str | None = None, overrides: list[str] | None = None, output: str | None = None,
               force: bool = False, progress: bool = True, compare: bool = True,
               config: RagrigConfig | None = None) -> dict[str, Any]:
    """Fine-tune the configured encoder on the published index (``config``: already loaded, the CLI's; else
    loaded from ``config_path`` and ``overrides``), then compare it with the base on the config's test sets."""
    cfg = flow_config(config, config_path, overrides)
    # every step a task in this process (the comparison's sweep included: not distributed, whatever the runner)
    result = run_adapt(cfg, output, force=force, progress=progress, compare=compare, executor=PrefectTasks())
    create_markdown_artifact(key="adapt-summary", markdown=adapt_markdown(result), description="ragrig adapt")
    return result


def run_adapt_flow(cfg: RagrigConfig, config_path: str | None, overrides: list[str] | None, output: str | None, *,
                   force: bool, progress: bool, compare: bool) -> dict[str, Any]:
    return adapt_flow.with_options(task_runner=task_runner_for(cfg))(
        config_path=config_path, overrides=list(overrides or []), output=output, force=force, progress=progress,
        compare=compare, config=cfg)
