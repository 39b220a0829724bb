"""Evaluate test sets on the published index: ``evaluate_testsets`` is the one sequence every entry point runs
(``ragrig eval``, the evaluate flow, ``ragrig gate``, each config of a sweep; ``ragrig.evaluate`` in the public
API); ``evaluate`` scores one test set (repeats, latency percentiles, variance, ragas) into an ``EvalReport``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.eval.hop_diagnostics import hop_gains
from ragrig.eval.metrics import HEADLINE
from ragrig.eval.relevance import Target, resolve_testset
from ragrig.eval.report import EvalReport, percentiles, score_results
from ragrig.eval.testset import TestSet, load_testset
from ragrig.eval.tracking.runs import RunOptions, log_failure, log_report
from ragrig.retrieval.documents import Document
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.frozen_heap import frozen_heap
from ragrig.retrieval.machine import this_machine
from ragrig.retrieval.results import RetrievalResult
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.retriever import Retriever


def load_testsets(cfg: RagrigConfig, paths: Sequence[str | Path | TestSet] | None = None,
                  drafts: bool = False) -> list[TestSet]:
    """Every test set (``paths``, default ``eval.testsets``; one already loaded is kept), each validated before
    any work starts. Draft cases are left out unless ``drafts``."""
    items = list(paths or cfg.eval.testsets)
    if not items:
        raise InputError("no test set: pass --testset FILE or set eval.testsets")
    return [p if isinstance(p, TestSet) else load_testset(p, drafts=drafts) for p in items]


def open_index(cfg: RagrigConfig) -> Retriever:
    """The retriever over the current published version of ``cfg``'s index."""
    return Retriever(cfg)


def resolve_all(testsets: Sequence[TestSet], documents: dict[str, Document]) -> list[dict[str, list[Target]]]:
    """Every expectation of every test set, resolved against one index version's documents."""
    return [resolve_testset(ts, documents) for ts in testsets]


def evaluate_testsets(
    cfg: RagrigConfig,
    testsets: Sequence[str | Path | TestSet] | None = None,
    *,
    retriever: Retriever | None = None,
    targets: Sequence[dict[str, list[Target]]] | None = None,
    repeats: int | None = None,
    max_hops: int | None = None,
    label: str = "",
    log: RunOptions | None = RunOptions(),
    executor: Executor = IN_PROCESS,
    memo: CandidateMemo | None = None,
    checks: Sequence[dict[str, Any] | None] | None = None,
) -> list[EvalReport]:
    """Evaluate every test set on the current index version, then log each to MLflow; one report per test set::

        reports = ragrig.evaluate(cfg, ["datasets/testsets/sample.yaml"])

    1. ``testsets`` (paths or loaded test sets; none: ``eval.testsets``) are loaded and validated first;
    2. the index is opened once (or ``retriever``: a sweep passes its own, with its candidate memo);
    3. every expectation of every test set is resolved against that version before anything is logged (or
       ``targets``: already resolved, one dict per test set, as a sweep does once per index);
    4. per test set: retrieve and score (``repeats``, ``max_hops`` and ``label`` as ``evaluate`` takes them),
       then, when ``cfg.mlflow.enabled`` and ``log`` is not None, log one MLflow run as ``log`` says and keep
       its id on the report (``mlflow_run_id``). ``log=None`` never logs (the gate judges without logging).
       A test set whose evaluation fails (a ``RagrigError``: its index damaged or removed under it) is logged
       as a FAILED run with the error, after the ones before it, and the error is raised.

    ``executor`` runs each step (``retrieval/executor.py``; default: here); the Prefect flows pass theirs
    (``tasks/executor.py``), so each step shows as a task while the sequence lives here only. ``memo``: the
    candidates a sweep shares across the configs it evaluates over one index version. ``checks``: the stale-case
    check of each test set (``eval.lifecycle.check``), kept on its report and logged with it."""
    call = executor.call
    if not testsets or not all(isinstance(t, TestSet) for t in testsets):
        sets: list[TestSet] = call("load-testsets", load_testsets, cfg, testsets)
    else:
        sets = list(testsets)
    if retriever is None:
        retriever = call("open-index", open_index, cfg)
    if targets is None:
        targets = call("resolve-expectations", resolve_all, sets, retriever.version.documents_by_id)
    logging = log is not None and cfg.mlflow.enabled
    reports = []
    for i, (ts, tg) in enumerate(zip(sets, targets, strict=True)):
        try:
            report = call("retrieve-and-score", _score, cfg, ts, retriever, tg, repeats, max_hops, label, memo)
        except Exception as exc:  # the test sets before this one are logged; this one is a FAILED run
            if logging:
                error = str(exc) if isinstance(exc, RagrigError) else f"{type(exc).__name__}: {exc}"
                call("log-mlflow-failure", log_failure, cfg, ts.name, error, log)
            raise
        report.testset_check = checks[i] if checks else None
        if logging:
            report.mlflow_run_id = call("log-mlflow", log_report, cfg, report, log)
        reports.append(report)
    return reports


def _score(cfg: RagrigConfig, ts: TestSet, retriever: Retriever, targets: dict[str, list[Target]],
           repeats: int | None, max_hops: int | None, label: str, memo: CandidateMemo | None) -> EvalReport:
    """``evaluate`` with positional arguments (what a stage passes)."""
    return evaluate(cfg, ts, retriever, repeats=repeats, max_hops=max_hops, label=label, targets=targets, memo=memo)


def evaluate(
    cfg: RagrigConfig,
    ts: TestSet,
    retriever: Retriever | None = None,
    *,
    repeats: int | None = None,
    search: Callable[[Retriever, list[str], int], list[RetrievalResult]] | None = None,
    label: str = "",
    max_hops: int | None = None,
    targets: dict[str, list[Target]] | None = None,
    memo: CandidateMemo | None = None,
) -> EvalReport:
    """Evaluate ``ts`` on the current index for ``cfg``. ``search`` defaults to batched hybrid retrieval.
    ``targets``: the test set already resolved against this index version (sweeps resolve once per index).
    ``memo``: candidates shared with other evaluations over the same index version (sweeps)."""
    retriever = retriever or open_index(cfg)
    ks = cfg.eval.k_values
    depth = max(max(ks), cfg.retrieval.top_k)
    if targets is None:
        targets = resolve_testset(ts, retriever.version.documents_by_id)
    queries = [c.query for c in ts.cases]
    n = repeats or cfg.eval.repeats
    hops = [c.max_hops if c.max_hops is not None else cfg.retrieval.max_hops for c in ts.cases]
    if max_hops is not None:
        hops = [max_hops] * len(ts.cases)
    # full Hits only where a report or ragas reads them; metrics read the whole ranking (result.ranked)
    keep = max(10, min(ks), cfg.retrieval.top_k)
    search_fn = search or (
        lambda r, qs, k: r.search_many(qs, top_k=k, max_hops=hops, retrieval=cfg.retrieval, hits=keep, memo=memo))
    with frozen_heap():
        return _evaluate(cfg, ts, retriever, targets, queries, n, search_fn, depth, ks, label)


def _evaluate(
    cfg: RagrigConfig, ts: TestSet, retriever: Retriever, targets: dict[str, list[Target]], queries: list[str], n: int,
    search_fn: Callable[[Retriever, list[str], int], list[RetrievalResult]], depth: int, ks: list[int], label: str,
) -> EvalReport:
    runs: list[tuple[dict[str, float], dict[str, dict[str, float]], list[dict[str, Any]]]] = []
    latencies: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        results_list = search_fn(retriever, queries, depth)
        wall = time.perf_counter() - t0
        results = {c.id: r for c, r in zip(ts.cases, results_list)}
        runs.append(score_results(ts, targets, results, ks))
        per_q = wall * 1000 / max(1, len(queries))
        latencies.extend(r.timings_ms.get("total", per_q) for r in results_list)
    overall, per_tag, rows = runs[-1]
    ragas: dict[str, float] = {}
    if cfg.eval.ragas:
        from ragrig.eval.ragas_metrics import ragas_scores

        ragas = ragas_scores([(results[c.id], targets[c.id]) for c in ts.cases], cfg.retrieval.top_k)
    variance: dict[str, float] = {}
    if n > 1:
        for key in HEADLINE:
            vals = [r[0].get(key, 0.0) for r in runs]
            variance[f"{key}.stdev"] = statistics.pstdev(vals)
    return EvalReport(
        testset=ts.name,
        testset_path=ts.path,
        testset_sha256=ts.sha256,
        index_key=retriever.version.layout.key,
        index_version=retriever.version.version,
        model_id=retriever.version.model_id,
        vector_search=retriever.vector_search,
        machine=this_machine(),
        k_values=ks,
        overall=overall,
        per_tag=per_tag,
        per_query=rows,
        latency_ms=percentiles(latencies),
        repeats=n,
        variance=variance,
        ragas=ragas,
        label=label,
        hop_gains=hop_gains(rows),
    )
