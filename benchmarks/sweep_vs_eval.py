"""A 12-config fusion sweep against one evaluation, measured in one run (goal: sweep <= 1.5x one eval).

Both sides do the same kind of work end to end: load the config and the test set, open the published
index, embed the queries, retrieve, score, log to MLflow (the sweep: one parent + 12 nested runs, plus
its check that each config's index is current). The index must exist
(`ragrig ingest -c configs/scifact.yaml`). Writes benchmarks/results/sweep_vs_eval_<name>.json.

    python benchmarks/sweep_vs_eval.py configs/sweeps/scifact-fusion.yaml
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def main(argv: list[str]) -> int:
    from configs.schema import load_config
    from eval.mlflow_log import log_report
    from eval.runner import evaluate
    from eval.sweep import expand, load_sweep, run_sweep
    from eval.testset import load_testset
    from retrieval.retriever import Retriever

    spec = load_sweep(argv[0] if argv else ROOT / "configs" / "sweeps" / "scifact-fusion.yaml")
    mlflow_dir = Path(tempfile.mkdtemp(prefix="ragrig-sweep-mlflow-"))
    extra = [f"mlflow.tracking_uri=sqlite:///{mlflow_dir}/mlflow.db", f"mlflow.artifact_location={mlflow_dir.as_uri()}/art"]
    cfg = load_config(spec.base, [*spec.set, *extra])
    # warm the OS file cache and the MLflow schema once, outside both measurements
    Retriever(cfg)
    from eval.mlflow_log import ensure_experiment

    ensure_experiment(cfg)

    # one evaluation as `ragrig eval --no-prefect` does it: load the config and the test set, open the
    # index, evaluate, log; the sweep's time below includes the same steps (once) and its ingest check
    t0 = time.perf_counter()
    cfg = load_config(spec.base, [*spec.set, *extra])
    ts = load_testset((spec.testsets or cfg.eval.testsets)[0])
    single = evaluate(cfg, ts, Retriever(cfg))
    log_report(cfg, single, run_name="single evaluation")
    one_eval = time.perf_counter() - t0

    t0 = time.perf_counter()
    result = run_sweep(spec, extra, progress=False)
    sweep_s = time.perf_counter() - t0
    n = len(expand(spec))
    out = {
        "sweep": spec.name, "configs": n, "queries": len(ts.cases), "one_eval_s": round(one_eval, 2),
        "sweep_s": round(sweep_s, 2), "ratio": round(sweep_s / one_eval, 3),
        "per_config_s": [round(r.seconds, 3) for r in result.rows],
        "best": result.best.label if result.best else None,
    }
    path = ROOT / "benchmarks" / "results" / f"sweep_vs_eval_{spec.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"one evaluation ({len(ts.cases)} queries, MLflow logged): {one_eval:.1f} s")
    print(f"{n}-config sweep ({spec.name}, nested MLflow runs):     {sweep_s:.1f} s")
    print(f"ratio sweep / one evaluation: {out['ratio']:.2f} (goal <= 1.5); best: {out['best']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
