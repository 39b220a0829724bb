"""A 12-config fusion sweep against one evaluation, measured in one run (goal: sweep <= 1.5x one eval).

Both sides do the same kind of work end to end: load the config and the test set, open the published
index, embed the queries, retrieve, score, log to MLflow (the sweep: one parent + 12 nested runs, plus
its check that each config's index is current). The index must exist
(`ragrig ingest -c configs/scifact.yaml`). Writes benchmarks/results/sweep_vs_eval_<name>.json.

    python benchmarks/sweep_vs_eval.py configs/sweeps/scifact-fusion.yaml [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    from ragrig.configs.load import load_config
    from ragrig.eval.evaluate import evaluate
    from ragrig.eval.sweep.run import run_sweep
    from ragrig.eval.sweep.spec import expand, load_sweep
    from ragrig.eval.testset import load_testset
    from ragrig.eval.tracking.runs import RunOptions, log_report
    from ragrig.retrieval.search.retriever import Retriever

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", nargs="?", default=str(ROOT / "configs" / "sweeps" / "scifact-fusion.yaml"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    repeats = max(1, args.repeats)
    spec = load_sweep(args.sweep)
    mlflow_dir = Path(tempfile.mkdtemp(prefix="ragrig-sweep-mlflow-"))
    extra = [f"mlflow.tracking_uri=sqlite:///{mlflow_dir}/mlflow.db", f"mlflow.artifact_location={mlflow_dir.as_uri()}/art"]
    cfg = load_config(spec.base, [*spec.set, *extra])
    # warm the OS file cache and the MLflow schema once, outside both measurements
    Retriever(cfg)
    from ragrig.eval.tracking.store import ensure_experiment

    ensure_experiment(cfg)

    # one evaluation as `ragrig eval --no-prefect` does it: load the config and the test set, open the
    # index, evaluate, log; the sweep's time below includes the same steps (once) and its ingest check.
    # Pairs repeat (evaluation then sweep, side by side) and the medians count: one pair's ratio varies by ~±0.2 here
    one_evals, sweeps = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cfg = load_config(spec.base, [*spec.set, *extra])
        ts = load_testset((spec.testsets or cfg.eval.testsets)[0])
        single = evaluate(cfg, ts, Retriever(cfg))
        log_report(cfg, single, RunOptions(run_name="single evaluation"))
        one_evals.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        result = run_sweep(spec, extra, progress=False)
        sweeps.append(time.perf_counter() - t0)
    one_eval, sweep_s = statistics.median(one_evals), statistics.median(sweeps)
    n = len(expand(spec))
    out = {
        "sweep": spec.name, "configs": n, "queries": len(ts.cases), "repeats": repeats,
        "one_eval_s": round(one_eval, 2), "sweep_s": round(sweep_s, 2), "ratio": round(sweep_s / one_eval, 3),
        "ratios": [round(b / a, 3) for a, b in zip(one_evals, sweeps)],
        "one_eval_samples_s": [round(x, 3) for x in one_evals], "sweep_samples_s": [round(x, 3) for x in sweeps],
        "per_config_s": [round(r.seconds, 3) for r in result.rows],
        "best": result.best.label if result.best else None,
    }
    path = ROOT / "benchmarks" / "results" / f"sweep_vs_eval_{spec.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"one evaluation ({len(ts.cases)} queries, MLflow logged): {one_eval:.2f} s (median of {repeats})")
    print(f"{n}-config sweep ({spec.name}, nested MLflow runs):     {sweep_s:.2f} s (median of {repeats})")
    print(f"ratio sweep / one evaluation: {out['ratio']:.2f} (goal <= 1.5; pairs: "
          f"{', '.join(f'{r:.2f}' for r in out['ratios'])}); best: {out['best']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
