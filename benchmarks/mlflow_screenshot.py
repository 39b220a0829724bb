"""A screenshot of the MLflow UI's run page for the newest ragrig evaluation run: what a user sees after
`make run` (the test set as the run's dataset input, its tags and metrics). Starts `mlflow server` on
127.0.0.1 over the config's store (bounded in time, stopped by process group) and takes the page with
headless Chromium (Debian's `chromium`; not a project dependency, so this is a docs script, not a test).

    python benchmarks/mlflow_screenshot.py [--out docs/img/mlflow-run.png] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import stop_group  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def newest_run(uri: str, experiment: str) -> tuple[str, str, str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise SystemExit(f"no MLflow experiment '{experiment}' in {uri}: run `make run` first")
    runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=20)
    runs = [r for r in runs if r.inputs and r.inputs.dataset_inputs] or runs
    if not runs:
        raise SystemExit(f"experiment '{experiment}' has no runs: run `make run` first")
    return exp.experiment_id, runs[0].info.run_id, runs[0].info.run_name or ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "mlflow-run.png"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--config", default=None)
    args = ap.parse_args()
    if not Path(args.chromium).exists():
        raise SystemExit(f"{args.chromium} not found: install Debian's chromium (apt-get install chromium)")

    from ragrig.configs.load import load_config
    from ragrig.eval.tracking.store import artifact_location, tracking_uri

    cfg = load_config(args.config)
    uri = tracking_uri(cfg)
    exp_id, run_id, name = newest_run(uri, cfg.mlflow.experiment)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                               "--backend-store-uri", uri, "--default-artifact-root", artifact_location(cfg),
                               "--workers", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/health", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("mlflow server did not start within 120 s") from None
                time.sleep(1)
        url = f"{base}/#/experiments/{exp_id}/runs/{run_id}"
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
                            "--window-size=1600,1200", "--virtual-time-budget=20000",
                            f"--screenshot={args.out}", url], check=True, timeout=180,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"{args.out}: run '{name}' ({run_id}) at {url}")
    finally:
        stop_group(server)


if __name__ == "__main__":
    main()
