"""A sweep on a Dask LocalCluster against the same sweep in-process, in one run, with MLflow through a tracking
server (an `mlflow server` on 127.0.0.1 started here, stopped by process group).

Per repeat, side by side: (a) ``run_sweep`` in this process (the default runner); (b) the same sweep with
``flow.runner=dask, flow.workers=N``: a fresh LocalCluster (what ``ragrig sweep --runner dask --workers N``
starts), each config a task; timed with and without starting the cluster. Both log a parent run and one nested
child per (config, test set) to the server; the script checks that every child is there, FINISHED, under its
parent, and that the two sweeps' rows are equal (labels and metrics). The index must exist
(`ragrig ingest -c configs/scifact.yaml`). Writes benchmarks/results/sweep_cluster_<name>.json.

    python benchmarks/sweep_cluster.py configs/sweeps/scifact-fusion.yaml [--workers 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import stop_group  # noqa: E402
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAGRIG_HOME", str(ROOT / ".ragrig"))  # what `ragrig` uses from the repo root


def start_mlflow(d: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(d / "mlflow.log", "wb")
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
           "--backend-store-uri", f"sqlite:///{d / 'server.db'}", "--default-artifact-root", str(d / "artifacts"),
           "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.5)
    stop(proc)
    raise SystemExit("mlflow server not healthy after 120 s")


def stop(proc: subprocess.Popen) -> None:
    stop_group(proc, grace_s=15)


def intact(uri: str, result: object) -> bool:
    """The parent FINISHED, and exactly the rows' runs under it, each FINISHED."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    parent = client.get_run(result.parent_run_id)
    kids = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{result.parent_run_id}'",
                              max_results=1000)
    ids = sorted(r.info.run_id for r in kids)
    return (parent.info.status == "FINISHED" and ids == sorted(r.run_id for r in result.rows)
            and all(r.info.status == "FINISHED" for r in kids))


def main(argv: list[str]) -> int:
    from ragrig.eval.sweep.run import run_sweep
    from ragrig.eval.sweep.spec import load_sweep, resolve
    from ragrig.eval.tracking.store import ensure_experiment
    from ragrig.flows.runners import cluster_executor
    from ragrig.retrieval.search.retriever import Retriever

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", nargs="?", default=str(ROOT / "configs" / "sweeps" / "scifact-fusion.yaml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    spec = load_sweep(args.sweep)
    tmp = Path(tempfile.mkdtemp(prefix="ragrig-sweep-cluster-"))
    proc, uri = start_mlflow(tmp)
    try:
        extra = [f"mlflow.tracking_uri={uri}", f"mlflow.artifact_location={tmp / 'artifacts'}",
                 f"home={Path(os.environ['RAGRIG_HOME']).resolve()}"]
        local_cfgs = resolve(spec, extra)
        dask_extra = [*extra, "flow.runner=dask", f"flow.workers={args.workers}"]
        dask_cfgs = resolve(spec, dask_extra)
        Retriever(local_cfgs[0][2])  # warm the OS file cache, outside both measurements
        ensure_experiment(local_cfgs[0][2])
        local_s, total_s, sweep_s, checks, equal = [], [], [], [], []
        for _ in range(max(1, args.repeats)):
            t0 = time.perf_counter()
            local = run_sweep(spec, extra, progress=False, configs=local_cfgs)
            local_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with cluster_executor(dask_cfgs[0][2]) as executor:
                t1 = time.perf_counter()
                dist = run_sweep(spec, dask_extra, progress=False, configs=dask_cfgs, executor=executor)
                sweep_s.append(time.perf_counter() - t1)
            total_s.append(time.perf_counter() - t0)
            checks.append(intact(uri, local) and intact(uri, dist))
            equal.append([(r.label, r.metrics) for r in local.rows] == [(r.label, r.metrics) for r in dist.rows])
    finally:
        stop(proc)
    med = statistics.median
    out = {
        "sweep": spec.name, "configs": len(local_cfgs), "workers": args.workers, "repeats": len(local_s),
        "cpus": os.cpu_count(), "tracking": "mlflow server (127.0.0.1, sqlite backend)",
        "in_process_s": round(med(local_s), 2), "cluster_total_s": round(med(total_s), 2),
        "cluster_sweep_s": round(med(sweep_s), 2),
        "ratio_total": round(med(total_s) / med(local_s), 3), "ratio_sweep": round(med(sweep_s) / med(local_s), 3),
        "in_process_samples_s": [round(x, 3) for x in local_s],
        "cluster_total_samples_s": [round(x, 3) for x in total_s],
        "cluster_sweep_samples_s": [round(x, 3) for x in sweep_s],
        "mlflow_intact": all(checks), "rows_equal": all(equal),
    }
    path = ROOT / "benchmarks" / "results" / f"sweep_cluster_{spec.name}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{out['configs']}-config sweep {spec.name}, medians of {out['repeats']} ({out['cpus']} CPUs):")
    print(f"  in-process:                      {out['in_process_s']:.2f} s")
    n = args.workers
    print(f"  LocalCluster of {n}, with start-up: {out['cluster_total_s']:.2f} s ({out['ratio_total']:.2f}x)")
    print(f"  LocalCluster of {n}, sweep only:    {out['cluster_sweep_s']:.2f} s ({out['ratio_sweep']:.2f}x)")
    print(f"  MLflow parent + children intact: {out['mlflow_intact']}; rows equal: {out['rows_equal']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
