"""Run a sweep: every config validated first, then one ingest per distinct ingestion config (the config hash),
and every config on its index evaluated with ``evaluate_testsets`` on a retriever that shares its work.

- Chunks whose text is the same across chunking levels are embedded once (the embedding cache).
- Per index version, the test sets are resolved once, and retrieval candidates (per source, per processed
  query, per depth) and query vectors are computed once and reused by every fusion / shaping variant.
- One MLflow parent run for the sweep (``parent``), one nested child run per (config, test set).
- With a distributed executor (``retrieval/executor.py``; flows/runners.py ``cluster_executor``: a Dask cluster),
  every index is ingested first, here, then each config is one task (``remote.evaluate_config``) that opens the
  version ingested here from the shared home; the rows come back in the same order as without one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.eval.evaluate import resolve_all
from ragrig.eval.report import EvalReport
from ragrig.eval.sweep.adapted import materialize, runnable, trained_settings
from ragrig.eval.sweep.parent import child_options, finish_parent, log_failed_child, run_status, start_parent
from ragrig.eval.sweep.remote import evaluate_config, evaluate_rows, logs_in_tasks
from ragrig.eval.sweep.result import IndexStats, SweepResult, SweepRow
from ragrig.eval.sweep.spec import Resolved, SweepSpec, resolve
from ragrig.eval.testset import TestSet, check_distinct, load_testset
from ragrig.eval.tracking.runs import log_report
from ragrig.retrieval import interrupts
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.frozen_heap import frozen_heap
from ragrig.retrieval.index.chroma import writes_collection
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline, IngestStats
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.retriever import Retriever

Item = tuple[str, dict[str, Any], RagrigConfig]  # (label, overrides, config): one of ``Resolved``
OnReport = Callable[[SweepRow, EvalReport], None]
"""Called after each (config, test set) with its row and whole report (``ragrig tune`` reads per-case scores
from it and drives a progress bar)."""


def run_sweep(spec: SweepSpec, extra: list[str] | None = None, *, log_mlflow: bool = True, progress: bool = True,
              executor: Executor = IN_PROCESS, configs: Resolved | None = None,
              on_report: OnReport | None = None) -> SweepResult:
    """Run a sweep. ``configs``: ``resolve(spec, extra)`` when the caller already validated them (the CLI).
    ``executor`` runs each step (default: here; the Prefect flow in flows/sweep.py passes one that runs each as
    a task), so the sequence lives here only; a distributed one evaluates the configs as tasks on its workers
    (each ingest still runs here, first)."""
    t0 = time.perf_counter()
    configs = configs if configs is not None else resolve(spec, extra)
    paths = spec.testsets or configs[0][2].eval.testsets
    if not paths:
        raise InputError("sweep: no test set (set 'testsets' in the sweep file or eval.testsets in the base config)")
    sets = [load_testset(t) for t in paths]  # read before any training or ingest: a missing one fails at once
    check_distinct(sets)
    configs = materialize(configs, executor, progress)  # adapted candidates (embedding.adapt: true): trained or found
    result = SweepResult(spec.name, spec.metric)
    result.trained = {label: t for label, ov, cfg in configs if (t := trained_settings(ov, cfg))}
    groups: dict[str, list[Item]] = {}
    for item in configs:
        groups.setdefault(item[2].ingest_hash(), []).append(item)
    base = configs[0][2]
    status, parent = "FINISHED", None
    try:
        # inside the try: an interrupt just after start_parent returns still ends its run (start_parent ends its
        # run itself when it raises)
        parent = start_parent(base, spec) if log_mlflow and base.mlflow.enabled else None
        with frozen_heap():
            seen_texts: set[str] = set()
            if not executor.distributed:
                for items in groups.values():
                    _run_group(spec, items, sets, result, seen_texts, parent, executor, progress, on_report)
            else:
                _run_mapped(spec, list(groups.values()), sets, result, seen_texts, parent, executor, progress,
                            on_report)
    except BaseException as exc:  # the parent says what happened: Ctrl-C (KILLED) or a failed config (FAILED)
        status = run_status(exc)
        raise
    finally:
        result.seconds["total"] = time.perf_counter() - t0
        if parent is not None:
            finish_parent(result, status)
    return result


def ingest_config(items: list[Item]) -> RagrigConfig:
    """The config a group's shared index is ingested with: the first that reads a Chroma collection when any
    does (``chroma.writes_collection``: the version then has the collection it reads), else the first."""
    return next((cfg for _, _, cfg in items if writes_collection(cfg)), items[0][2])


def _ingest(cfg: RagrigConfig, progress: bool) -> IngestStats:
    return IngestPipeline(cfg, progress=progress).run()


def _ingest_group(cfg0: RagrigConfig, result: SweepResult, seen_texts: set[str], executor: Executor,
                  progress: bool) -> IndexVersion:
    """Ingest one group's index (a no-op when current) and open its published version."""
    t1 = time.perf_counter()
    stats = executor.call("ingest", _ingest, cfg0, progress)
    version = IndexVersion.current(cfg0)
    seen_texts.update(c.sha256 for c in version.chunks)
    result.indexes.append(IndexStats(version.layout.key, len(version.chunks), stats.chunks_embedded,
                                     stats.chunks_cached, len(seen_texts), time.perf_counter() - t1))
    return version


def _run_mapped(spec: SweepSpec, groups: list[list[Item]], sets: list[TestSet], result: SweepResult,
                seen_texts: set[str], parent: Any, executor: Executor, progress: bool,
                on_report: OnReport | None) -> None:
    """Every index ingested here first, then one task per config through ``executor.map``; the versions stay
    pinned (leased) here until every task is done. MLflow children: logged by the tasks to a tracking server,
    else here as each result returns (``remote.logs_in_tasks``)."""
    versions = [_ingest_group(ingest_config(items), result, seen_texts, executor, progress) for items in groups]
    calls, logs = [], []
    for items, version in zip(groups, versions):
        for label, ov, cfg in items:
            log = child_options(parent, spec, label, runnable(ov, result.trained.get(label, {})))
            logs.append((cfg, log))
            calls.append((_home_pinned(items[0][2]), version.version, label, ov, _home_pinned(cfg), sets,
                          log if logs_in_tasks(cfg) else None))
    results = executor.map("evaluate-config", evaluate_config, calls)
    for cfg, log in logs:
        try:
            pairs = next(results)
        except Exception as exc:  # this config's task failed: its child run says so (a task that logs did)
            if log is not None and not logs_in_tasks(cfg) and cfg.mlflow.enabled:
                log_failed_child(cfg, sets, exc, log)
            raise
        for row, report in pairs:
            if log is not None and row.run_id is None and cfg.mlflow.enabled:
                row.run_id = report.mlflow_run_id = executor.call("log-mlflow", log_report, cfg, report, log)
            result.rows.append(row)
            if on_report is not None:
                on_report(row, report)


def _home_pinned(cfg: RagrigConfig) -> RagrigConfig:
    """``cfg`` with its home as this process resolves it ($RAGRIG_HOME or ./.ragrig): a worker has its own
    environment and working directory."""
    return cfg if cfg.home else cfg.model_copy(update={"home": str(cfg.home_dir)})


def _run_group(spec: SweepSpec, items: list[Item], sets: list[TestSet], result: SweepResult, seen_texts: set[str],
               parent: Any, executor: Executor, progress: bool, on_report: OnReport | None = None) -> None:
    """The configs that share one index: ingest it (a no-op when current), open it once, resolve the test sets
    once, then evaluate (and log) every config on every test set."""
    cfg0 = items[0][2]
    version = _ingest_group(ingest_config(items), result, seen_texts, executor, progress)
    retriever = Retriever(cfg0, version)
    memo = CandidateMemo()  # candidates fetched once per index version, reused by every fusion/shaping variant
    resolved = resolve_all(sets, version.documents_by_id)
    for label, ov, cfg in items:
        interrupts.check()  # a Ctrl-C a library swallowed (retrieval/interrupts.py) stops the sweep here
        log = child_options(parent, spec, label, runnable(ov, result.trained.get(label, {})))
        for row, report in evaluate_rows(cfg, label, ov, sets, retriever, resolved, memo, log, executor):
            result.rows.append(row)
            if on_report is not None:
                on_report(row, report)
