"""The ``evaluate`` Prefect flow: ``eval.evaluate.evaluate_testsets`` with each step as a task (load the test
sets, open the index, resolve the expectations, then retrieve-and-score and log-mlflow per test set), and a
Markdown artifact per report. Triggered by the ingest flow's ``ragrig.index.published`` event (prefect.yaml)."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from ragrig.configs.models import RagrigConfig
from ragrig.eval.evaluate import evaluate_testsets
from ragrig.eval.tracking.runs import RunOptions
from ragrig.flows.params import flow_config
from ragrig.flows.render.evaluation import eval_markdown
from ragrig.tasks.stages import run_stage


@flow(name="evaluate", log_prints=False)
def evaluate_flow(
    config_path: str | None = None,
    overrides: list[str] | None = None,
    testsets: list[str] | None = None,
    repeats: int | None = None,
    run_name: str | None = None,
    max_hops: int | None = None,
    config: RagrigConfig | None = None,
) -> list[dict[str, Any]]:
    """Evaluate the current index version on the config's test sets (or ``testsets``). ``config``: already
    loaded (the CLI's); else loaded from ``config_path`` and ``overrides`` (deployments)."""
    cfg = flow_config(config, config_path, overrides)
    reports = evaluate_testsets(cfg, testsets or None, repeats=repeats, max_hops=max_hops,
                                log=RunOptions(run_name=run_name), stage=run_stage)
    out = []
    for report in reports:
        result = report.to_dict()
        create_markdown_artifact(key=f"eval-{report.testset}".lower().replace("_", "-")[:60],
                                 markdown=eval_markdown(result), description=f"ragrig evaluation of {report.testset}")
        out.append(result)
    return out
