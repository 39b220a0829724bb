"""What `ragrig tune` costs against evaluating its candidates one by one (goal: tune <= 1.2x the sum of the
candidates' single evaluations, plus the ingests a new chunking or encoder needs, which both sides pay alike).

Three measurements over the same space and test set, MLflow logged on every side, the index already built
(outside the measurement: an ingest per distinct chunking/encoder costs the same either way):
- cold singles: per candidate what `ragrig eval --no-prefect` does (load the config and test set, open the
  index, evaluate, log one run);
- warm singles: one open index, each candidate evaluated and logged on it without sharing candidates (the pure
  evaluation work; the honest floor);
- tune: `run_tune` (one parent run, a nested run per candidate with its fold scores, nested selection).
Run it on the small sample corpus only (seconds); writes benchmarks/results/tune_cost_<space>.json.

    python benchmarks/tune_cost.py [configs/tune/sample-small.yaml] [--repeats 1]
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
    from ragrig.eval.evaluate import evaluate
    from ragrig.eval.testset import load_testset
    from ragrig.eval.tracking.runs import RunOptions, log_report
    from ragrig.eval.tracking.store import ensure_experiment
    from ragrig.eval.tune.run import run_tune
    from ragrig.eval.tune.space import load_space, resolve_space
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("space", nargs="?", default=str(ROOT / "configs" / "tune" / "sample-small.yaml"))
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    spec = load_space(args.space)
    tmp = Path(tempfile.mkdtemp(prefix="ragrig-tune-cost-"))
    extra = [f"mlflow.tracking_uri=sqlite:///{tmp}/mlflow.db", f"mlflow.artifact_location={tmp.as_uri()}/art"]
    items = resolve_space(spec, extra)
    t0 = time.perf_counter()
    for ingest_hash in dict.fromkeys(cfg.ingest_hash() for _, _, cfg in items):  # the indexes, outside the timings
        IngestPipeline(next(c for _, _, c in items if c.ingest_hash() == ingest_hash)).run()
    ingest_s = time.perf_counter() - t0
    cfg0 = items[0][2]
    path = (spec.testsets or cfg0.eval.testsets)[0]
    Retriever(cfg0)  # warm the OS file cache and the MLflow schema once
    ensure_experiment(cfg0)

    cold, warm, tune = [], [], []
    for _ in range(max(1, args.repeats)):
        t0 = time.perf_counter()
        for _label, _ov, cfg in resolve_space(spec, extra):
            report = evaluate(cfg, load_testset(path), Retriever(cfg))
            log_report(cfg, report, RunOptions(run_name="single evaluation", plots=False))
        cold.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        retriever, ts = Retriever(cfg0), load_testset(path)
        for _label, _ov, cfg in items:
            log_report(cfg, evaluate(cfg, ts, retriever), RunOptions(run_name="single evaluation", plots=False))
        warm.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        result = run_tune(spec, extra, testsets=[path])
        tune.append(time.perf_counter() - t0)
    c, w, t = statistics.median(cold), statistics.median(warm), statistics.median(tune)
    out = {"space": spec.name, "candidates": len(items), "cases": result.cases, "folds": spec.folds,
           "repeats": len(tune), "ingest_s": round(ingest_s, 2),
           "cold_singles_s": round(c, 2), "warm_singles_s": round(w, 2), "tune_s": round(t, 2),
           "ratio_vs_cold": round(t / c, 3), "ratio_vs_warm": round(t / w, 3),
           "tune_select_s": round(result.seconds.get("select", 0.0), 4),
           "samples": {"cold": [round(x, 2) for x in cold], "warm": [round(x, 2) for x in warm],
                       "tune": [round(x, 2) for x in tune]},
           "verdict": result.verdict}
    dest = ROOT / "benchmarks" / "results" / f"tune_cost_{spec.name}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"| {spec.name}: {len(items)} candidates x {result.cases} cases | seconds | tune / this |")
    print("|---|---:|---:|")
    print(f"| cold singles (`ragrig eval` per candidate) | {c:.2f} | {t / c:.2f} |")
    print(f"| warm singles (one open index, no shared candidates) | {w:.2f} | {t / w:.2f} |")
    print(f"| tune (nested CV, MLflow parent + {len(items)} nested runs) | {t:.2f} | 1.00 |")
    print(f"(index built beforehand: {ingest_s:.1f} s; selection itself {out['tune_select_s']} s; goal tune <= 1.2x "
          f"the singles)\nwrote {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
