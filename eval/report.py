"""The shape of an evaluation: ``EvalReport`` (one JSON-able dict via ``to_dict``), and how one pass of
retrieval results becomes its per-query rows, per-tag and overall means (``score_results``).

``overall`` holds keys like ``ndcg@10``; ``per_tag`` the same means per tag (plus ``n``); ``per_query`` rows
hold the metrics, latency, top hits (relevance marks, per-source ranks, hop), the rank of each expected section
in the whole ranking, the expected sections missed in the top 10 and the hop diagnostics
(``eval.hop_diagnostics``); ``hop_gains`` the mean recall gain per hop; ``latency_ms`` the percentiles over every
query of every repeat; ``testset_check`` the stale-case check the evaluation ran after (when it ran one); and
the provenance: index version, model, test-set sha256.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ragrig.eval.hop_diagnostics import hop_rows
from ragrig.eval.metrics import mean_metrics, query_metrics
from ragrig.eval.relevance import Target
from ragrig.eval.testset import TestSet
from ragrig.retrieval.results import RetrievalResult


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
    mlflow_run_id: str | None = None  # set once the report is logged (after report.json is written)
    hop_gains: dict[str, dict[str, float]] = field(default_factory=dict)  # scope (overall, tag) -> hop -> gain
    testset_check: dict[str, Any] | None = None  # eval.lifecycle.check.CheckReport.to_dict(), when one ran
    vector_search: str = "exact"  # what answered vector queries (retrieval/search/vector_search.py)
    machine: str = ""  # the CPU the numbers came from (retrieval/machine.py); "" when not known

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "label": self.label,
            "testset": self.testset,
            "testset_path": self.testset_path,
            "testset_sha256": self.testset_sha256,
            "index": {"key": self.index_key, "version": self.index_version, "model_id": self.model_id,
                      "vector_search": self.vector_search, "machine": self.machine},
            "k_values": self.k_values,
            "overall": self.overall,
            "per_tag": self.per_tag,
            "latency_ms": self.latency_ms,
            "repeats": self.repeats,
            "variance": self.variance,
            "ragas": self.ragas,
            "hop_gains": self.hop_gains,
            "per_query": self.per_query,
        }
        if self.testset_check is not None:
            d["testset_check"] = self.testset_check
        if self.mlflow_run_id is not None:
            d["mlflow_run_id"] = self.mlflow_run_id
        return d


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
                        "relevant": bool(hit_keys), "hop": h.hop, "expected": hit_keys,
                        "sources": {s: v.rank for s, v in h.sources.items()}})
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
            "expected_ranks": expected_ranks(res, tg),
            "hops": hop_rows(res, tg),
        })
    overall = mean_metrics(metric_rows)
    per_tag = {t: {**mean_metrics(v), "n": float(len(v))} for t, v in sorted(by_tag.items())}
    return overall, per_tag, rows


def expected_ranks(res: RetrievalResult, targets: list[Target]) -> dict[str, int | None]:
    """Each expected section's first rank in the whole ranking (None: not in it)."""
    out: dict[str, int | None] = {t.key: None for t in targets}
    for rank, c in enumerate(res.ranked, 1):
        for t in targets:
            if out[t.key] is None and t.touches(c.doc_id, c.start, c.end):
                out[t.key] = rank
        if all(v is not None for v in out.values()):
            break
    return out

