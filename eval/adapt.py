"""``ragrig adapt`` end to end: the fine-tune (``retrieval/adapt``), its MLflow run (``tracking/adapt.py``),
then the evidence: the adapted model against the base on the config's test sets, through the sweep's machinery
(one ingest per index, nested MLflow runs) and the paired permutation test ``tune`` and the gate use. Two fixed
candidates, no selection among them: the test's p-value is the whole story (no nested CV needed).

The test sets are read only by the comparison, after training: the pairs come from the index alone
(tests/retrieval/adapt/test_no_testset.py)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from ragrig.configs.models import RagrigConfig
from ragrig.eval.report import EvalReport
from ragrig.eval.stats import permutation_p
from ragrig.eval.sweep.adapted import with_model
from ragrig.eval.sweep.result import SweepRow
from ragrig.retrieval.adapt.run import OnStep, adapt
from ragrig.retrieval.executor import IN_PROCESS, Executor

COMPARED = ("ndcg@10", "recall@10")  # tested per case; the first decides the verdict
ALPHA = 0.05


def compare_adapted(cfg: RagrigConfig, folder: str, *, progress: bool = False, log_mlflow: bool = True,
                    executor: Executor = IN_PROCESS) -> dict[str, Any]:
    """Base vs adapted on ``cfg.eval.testsets``: each one's overall metrics per test set, and per compared metric
    the means over every case, the gain, the permutation test's p and whether the gain is significant."""
    from ragrig.eval.sweep.run import run_sweep
    from ragrig.eval.sweep.spec import SweepSpec

    if not cfg.eval.testsets:
        return {"skipped": "no test set (eval.testsets is empty)"}
    adapted = {"embedding.model": folder}
    spec = SweepSpec(name="adapt-compare", configs=[{}, adapted], metric=COMPARED[0], testsets=list(cfg.eval.testsets))
    items = [("base", {}, cfg), ("adapted", adapted, with_model(cfg, folder))]
    scores: dict[str, dict[tuple[str, str], dict[str, float]]] = {"base": {}, "adapted": {}}
    rows: list[dict[str, Any]] = []

    def collect(row: SweepRow, report: EvalReport) -> None:
        for q in report.per_query:
            scores[row.label][(report.testset, q["id"])] = q["metrics"]
        rows.append({"label": row.label, "testset": row.testset, "index_key": row.index_key, "metrics": row.metrics,
                     "run_id": row.run_id})

    sweep = run_sweep(spec, log_mlflow=log_mlflow and cfg.mlflow.enabled, progress=progress,
                      executor=executor, configs=items, on_report=collect)
    keys = sorted(scores["base"])
    tests = {}
    for m in COMPARED:
        a = np.array([scores["base"][k][m] for k in keys])
        b = np.array([scores["adapted"][k][m] for k in keys])
        p = permutation_p(b - a)
        gain = float(b.mean() - a.mean())
        tests[m] = {"base": float(a.mean()), "adapted": float(b.mean()), "gain": gain, "p": p,
                    "significant": bool(p < ALPHA and gain > 0), "worse": bool(p < ALPHA and gain < 0)}
    head = tests[COMPARED[0]]
    verdict = ("significantly better" if head["significant"] else
               "significantly worse" if head["worse"] else "no significant difference")
    return {"cases": len(keys), "rows": rows, "tests": tests, "alpha": ALPHA, "metric": COMPARED[0],
            "verdict": verdict, "parent_run_id": sweep.parent_run_id, "seconds": sweep.seconds.get("total", 0.0)}


def run_adapt(cfg: RagrigConfig, out: str | None = None, *, force: bool = False, progress: bool = True,
              compare: bool = True, executor: Executor = IN_PROCESS, on_step: OnStep | None = None,
              ) -> dict[str, Any]:
    """Adapt, log the run, compare with the base; the whole result as a dict (what --output-json writes)."""
    call = executor.call
    t0 = time.perf_counter()
    result = adapt(cfg, out, force=force, progress=progress, on_step=on_step, executor=executor).to_dict()
    if cfg.mlflow.enabled:
        from ragrig.eval.tracking.adapt import log_adapt

        result["mlflow_run_id"] = call("adapt-log-mlflow", log_adapt, cfg, result)
    if compare:
        result["compare"] = compare_adapted(cfg, result["model"], progress=progress, executor=executor)
    result["total_seconds"] = time.perf_counter() - t0
    return result
