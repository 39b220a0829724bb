"""One sweep config's evaluation as a task that may run in another process (a Dask worker): it opens the index
version its driver ingested and pinned, read-only, from the shared home, and returns small results (a
``SweepRow`` and the ``EvalReport`` per test set). ``evaluate_rows`` is the one per-config loop, which the
in-process sweep runs too.

Per worker process, the opened version, its retriever, the resolved test sets and the candidate memo are kept
(``_opened``) for as long as the sweep's configs over that version keep coming: a worker that evaluates
several fusion variants of one index fetches each query's candidates once, as the in-process sweep does.

MLflow: with a tracking server (``http(s)://``), each task logs its own nested run under the driver's parent;
a SQLite store takes no concurrent writers, so then the task logs nothing and the driver logs each child as
its results return (``logs_in_tasks``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.eval.evaluate import evaluate_testsets, resolve_all
from ragrig.eval.report import EvalReport
from ragrig.eval.relevance import Target
from ragrig.eval.sweep.result import SweepRow
from ragrig.eval.testset import TestSet
from ragrig.eval.tracking.runs import RunOptions
from ragrig.eval.tracking.store import tracking_uri
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.retriever import Retriever


def logs_in_tasks(cfg: RagrigConfig) -> bool:
    """Whether the tasks log their own MLflow runs: only to a tracking server, which takes concurrent writers."""
    return (cfg.mlflow.tracking_uri or "").startswith(("http://", "https://"))


@dataclass
class _Opened:
    key: tuple[str, str, tuple[str, ...]]
    retriever: Retriever
    memo: CandidateMemo
    targets: list[dict[str, list[Target]]]


_opened: list[_Opened] = []  # this process's last opened version (one: a worker moves on to the next index)


def _open(index_cfg: RagrigConfig, version: str, sets: list[TestSet]) -> _Opened:
    key = (index_cfg.index_key(), version, tuple(f"{ts.name}:{ts.sha256}" for ts in sets))
    if _opened and _opened[0].key == key:
        return _opened[0]
    _opened.clear()
    v = IndexVersion.pinned(index_cfg, version)
    opened = _Opened(key, Retriever(index_cfg, v), CandidateMemo(), resolve_all(sets, v.documents_by_id))
    _opened.append(opened)
    return opened


def evaluate_config(index_cfg: RagrigConfig, version: str, label: str, overrides: dict[str, Any], cfg: RagrigConfig,
                    sets: list[TestSet], log: RunOptions | None) -> list[tuple[SweepRow, EvalReport]]:
    """Evaluate ``cfg`` on every test set over ``version`` of ``index_cfg``'s index (the retriever is built from
    ``index_cfg``, the first config of the group, as the in-process sweep builds it); ``log``: this config's
    child run, logged here (None: not logged here)."""
    if log is not None:
        import mlflow

        mlflow.set_tracking_uri(tracking_uri(cfg))
    opened = _open(index_cfg, version, sets)
    return list(evaluate_rows(cfg, label, overrides, sets, opened.retriever, opened.targets, opened.memo, log))


def evaluate_rows(cfg: RagrigConfig, label: str, overrides: dict[str, Any], sets: Sequence[TestSet],
                  retriever: Retriever, targets: Sequence[dict[str, list[Target]]], memo: CandidateMemo,
                  log: RunOptions | None, executor: Executor = IN_PROCESS) -> Iterator[tuple[SweepRow, EvalReport]]:
    """One sweep config on every test set over one opened version: a row (and its report) per test set, as each
    is done; one at a time, so each row has its own seconds. The one loop of both sweeps: in this process
    (``run._run_group``) and as a task (``evaluate_config``)."""
    for ts, tg in zip(sets, targets):
        t0 = time.perf_counter()
        [report] = evaluate_testsets(cfg, [ts], retriever=retriever, targets=[tg], label=label, log=log,
                                     executor=executor, memo=memo)
        yield (SweepRow(label, overrides, retriever.version.layout.key, ts.name, report.overall,
                        time.perf_counter() - t0, report.mlflow_run_id), report)
