"""The ``evaluate`` Prefect flow: ``eval.evaluate.evaluate_testsets`` with each step as a task (load the test
sets, open the index, resolve the expectations, then retrieve-and-score and log-mlflow per test set), and a
Markdown artifact per report.

Triggered by the ingest flow's ``ragrig.index.published`` event (prefect.yaml), it gets the new ``version`` and
runs ``eval.lifecycle.published.evaluate_published`` instead: the stale-case check first (artifact
``testset-check``; its table also goes into each MLflow run), the evaluation of the new version, the same cases
on the version before it, the diff between the two with the cases it touches and their paired deltas, and the
gate (artifact ``version-diff``). The run fails, after its artifacts and MLflow runs are written, when a case's
evidence is gone or the gate BLOCKs: a bad re-ingest shows as a failed run the night it happens."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.eval.evaluate import evaluate_testsets
from ragrig.eval.gate import load_policy
from ragrig.eval.gate import to_markdown as gate_markdown
from ragrig.eval.lifecycle.check import to_markdown as check_markdown
from ragrig.eval.lifecycle.diff import to_markdown as diff_markdown
from ragrig.eval.lifecycle.published import VersionEvaluation, evaluate_published
from ragrig.eval.tracking.runs import RunOptions
from ragrig.flows.params import flow_config
from ragrig.flows.render.evaluation import eval_markdown
from ragrig.tasks.executor import PrefectTasks


class PublishedVersionFailed(RagrigError):
    """The evaluation of a newly published version found gone evidence or a BLOCK (exit code 1)."""

    exit_code = 1


@flow(name="evaluate", log_prints=False)
def evaluate_flow(
    config_path: str | None = None,
    overrides: list[str] | None = None,
    testsets: list[str] | None = None,
    repeats: int | None = None,
    run_name: str | None = None,
    max_hops: int | None = None,
    config: RagrigConfig | None = None,
    version: str | None = None,
    policy: str | None = None,
) -> list[dict[str, Any]]:
    """Evaluate the current index version on the config's test sets (or ``testsets``). ``config``: already
    loaded (the CLI's); else loaded from ``config_path`` and ``overrides`` (deployments). ``version`` (the
    published event's): check, evaluate, diff and gate that version against the one before it, under the gate
    policy file ``policy`` (default: the built-in policy)."""
    cfg = flow_config(config, config_path, overrides)
    if version not in (None, "", "None"):
        return _published(cfg, str(version), testsets, policy, run_name)
    reports = evaluate_testsets(cfg, testsets or None, repeats=repeats, max_hops=max_hops,
                                log=RunOptions(run_name=run_name), executor=PrefectTasks())
    return [_eval_artifact(report.to_dict()) for report in reports]


def _eval_artifact(result: dict[str, Any]) -> dict[str, Any]:
    create_markdown_artifact(key=f"eval-{result['testset']}".lower().replace("_", "-")[:60],
                             markdown=eval_markdown(result), description=f"ragrig evaluation of {result['testset']}")
    return result


def _published(cfg: RagrigConfig, version: str, testsets: list[str] | None, policy: str | None,
               run_name: str | None) -> list[dict[str, Any]]:
    result: VersionEvaluation = evaluate_published(cfg, version, testsets or None, load_policy(policy or None),
                                                   log=RunOptions(run_name=run_name or f"published-{version}"),
                                                   executor=PrefectTasks())
    create_markdown_artifact(key="testset-check", markdown=check_markdown([c.to_dict() for c in result.checks]),
                             description=f"ragrig test-set check of {version}")
    out = [_eval_artifact(r.to_dict()) for r in result.reports]
    if result.diff is not None:
        md = diff_markdown(result.diff)
        if result.gate:
            md += "\n\n" + gate_markdown(result.gate)
        create_markdown_artifact(key="version-diff", markdown=md,
                                 description=f"ragrig diff {result.previous} -> {version} and the gate")
    logger = get_run_logger()
    logger.info("version %s against %s: check %s; gate %s", version, result.previous or "(none)",
                "; ".join(f"{c.testset}: {c.counts}" for c in result.checks), result.verdict or "not run")
    if result.failed:
        raise PublishedVersionFailed(f"index version {version}: {result.failed}")
    return out
