"""Run a test set against a published index and compute per-query, per-tag and overall metrics.

The report is one JSON-able dict: ``overall`` (keys like ``ndcg@10``), ``per_tag``,
``per_query`` rows (metrics, latency, top hits, misses), ``latency_ms`` percentiles,
and provenance (index version, model, test-set sha256).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ragrig.configs.models import RagrigConfig
from ragrig.eval.metrics import mean_metrics, query_metrics
from ragrig.eval.relevance import Target, resolve_testset
from ragrig.eval.testset import TestSet
from ragrig.retrieval.frozen_heap import frozen_heap
from ragrig.retrieval.results import RetrievalResult
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.retriever import Retriever

HEADLINE = ("ndcg@10", "recall@10", "mrr@10", "precision@5", "recall@100", "hit_rate@5")


@dataclass
class EvalReport:
    testset: str
    testset_path: str | None
    testset_sha256: str | None
    index_key: str
    index_version: str
    model_id: str
    k_values: list[int]
    overall: dict[str, float]
    per_tag: dict[str, dict[str, float]]
    per_query: list[dict[str, Any]]
    latency_ms: dict[str, float]
    repeats: int = 1
    variance: dict[str, float] = field(default_factory=dict)
    ragas: dict[str, float] = field(default_factory=dict)
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "testset": self.testset,
            "testset_path": self.testset_path,
            "testset_sha256": self.testset_sha256,
            "index": {"key": self.index_key, "version": self.index_version, "model_id": self.model_id},
            "k_values": self.k_values,
            "overall": self.overall,
            "per_tag": self.per_tag,
            "latency_ms": self.latency_ms,
            "repeats": self.repeats,
            "variance": self.variance,
            "ragas": self.ragas,
            "per_query": self.per_query,
        }


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    arr = np.asarray(values, dtype=float)
    return {
        "p50": float(np.percentile(arr, 50)),
        "p95": float(np.percentile(arr, 95)),
        "p99": float(np.percentile(arr, 99)),
        "mean": float(arr.mean()),
        "max": float(arr.max()),
    }


def score_results(
    ts: TestSet, targets: dict[str, list[Target]], results: dict[str, RetrievalResult], ks: list[int]
) -> tuple[dict[str, float], dict[str, dict[str, float]], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    by_tag: dict[str, list[dict[str, float]]] = {}
    metric_rows: list[dict[str, float]] = []
    for case in ts.cases:
        res = results[case.id]
        tg = targets[case.id]
        m = query_metrics(res.ranked, tg, ks)
        metric_rows.append(m)
        for tag in case.tags or ["untagged"]:
            by_tag.setdefault(tag, []).append(m)
        top = []
        for rank, h in enumerate(res.hits[: max(10, min(ks))], 1):
            hit_keys = [t.key for t in tg if t.touches(h.doc_id, h.start, h.end)]
            top.append({"rank": rank, "chunk_id": h.chunk_id, "header": h.header, "score": round(h.score, 6),
                        "relevant": bool(hit_keys), "hop": h.hop})
        rows.append({
            "id": case.id,
            "query": case.query,
            "tags": case.tags,
            "expected": [t.key for t in tg],
            "missed@10": [t.key for t in tg if not any(
                t.touches(h.doc_id, h.start, h.end) for h in res.hits[:10])],
            "metrics": m,
            "latency_ms": res.timings_ms.get("total", 0.0),
            "normalized": res.normalized,
            "expansions": res.expansions,
            "top": top,
        })
    overall = mean_metrics(metric_rows)
    per_tag = {t: {**mean_metrics(v), "n": float(len(v))} for t, v in sorted(by_tag.items())}
    return overall, per_tag, rows


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
    retriever = retriever or Retriever(cfg)
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
        k_values=ks,
        overall=overall,
        per_tag=per_tag,
        per_query=rows,
        latency_ms=percentiles(latencies),
        repeats=n,
        variance=variance,
        ragas=ragas,
        label=label,
    )
