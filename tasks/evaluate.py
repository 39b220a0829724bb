"""Prefect tasks for evaluation: thin wrappers over ``eval`` (no logic lives here)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NONE
from ragrig.configs.models import RagrigConfig
from ragrig.eval.evaluate import EvalReport, evaluate
from ragrig.eval.mlflow_log import log_report
from ragrig.eval.testset import TestSet, load_testset
from ragrig.retrieval.search.retriever import Retriever


@task(name="load-testset", cache_policy=NONE)
def load_testset_task(path: str) -> TestSet:
    return load_testset(path)


@task(name="open-index", cache_policy=NONE)
def open_retriever_task(cfg: RagrigConfig) -> Retriever:
    return Retriever(cfg)


@task(name="retrieve-and-score", cache_policy=NONE)
def evaluate_task(
    cfg: RagrigConfig, ts: TestSet, retriever: Retriever, repeats: int | None = None, max_hops: int | None = None
) -> EvalReport:
    return evaluate(cfg, ts, retriever, repeats=repeats, max_hops=max_hops)


@task(name="log-mlflow", cache_policy=NONE, retries=2, retry_delay_seconds=2)
def log_mlflow_task(cfg: RagrigConfig, report: EvalReport, run_name: str | None = None) -> str:
    return log_report(cfg, report, run_name=run_name)
