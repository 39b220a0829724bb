"""The ``evaluate`` Prefect flow: open the published index, run every test set, log each to MLflow."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config
from ragrig.flows.report import eval_markdown
from ragrig.tasks.evaluate import evaluate_task, load_testset_task, log_mlflow_task, open_retriever_task


@flow(name="evaluate", log_prints=False)
def evaluate_flow(
    config_path: str | None = None,
    overrides: list[str] | None = None,
    testsets: list[str] | None = None,
    repeats: int | None = None,
    run_name: str | None = None,
    max_hops: int | None = None,
) -> list[dict[str, Any]]:
    """Evaluate the current index version on the config's test sets (or ``testsets``)."""
    if config_path in ("", "None"):  # an event payload without a config path
        config_path = None
    if isinstance(overrides, str):  # a templated trigger parameter arrives as text
        import json

        overrides = json.loads(overrides) if overrides.strip() else []
    cfg = load_config(config_path, overrides)
    paths = testsets or cfg.eval.testsets
    if not paths:
        raise InputError("no test set: pass --testset FILE or set eval.testsets in the config")
    retriever = open_retriever_task(cfg)
    out = []
    for path in paths:
        ts = load_testset_task(path)
        report = evaluate_task(cfg, ts, retriever, repeats, max_hops)
        result = report.to_dict()
        if cfg.mlflow.enabled:
            result["mlflow_run_id"] = log_mlflow_task(cfg, report, run_name)
        create_markdown_artifact(key=f"eval-{ts.name}".lower().replace("_", "-")[:60], markdown=eval_markdown(result),
                                 description=f"ragrig evaluation of {ts.name}")
        out.append(result)
    return out
