"""Issue 36 defect 11: Ctrl-C with the Dask runner is one line, "interrupted", exit 130: no worker tracebacks.
A terminal's Ctrl-C is SIGINT to the whole foreground process group, so the test sends it to the group: the
LocalCluster's worker processes used to print a KeyboardInterrupt traceback each (69 lines on two workers) and
a warning per cancelled task; they ignore SIGINT now and the driver stops them (``flows/cluster_worker.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")
ROOT = Path(__file__).resolve().parents[2]


def _sigint_ignored(pid: int) -> bool:
    """Whether ``pid`` ignores SIGINT now (the driver does while its cluster starts: ``runners.local_cluster``)."""
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    return bool(mask & (1 << (signal.SIGINT - 1)))


def _workers(pid: int) -> int:
    n = 0
    for child in psutil.Process(pid).children(recursive=True):
        try:
            n += "spawn_main" in " ".join(child.cmdline())  # multiprocessing's spawned worker processes
        except psutil.Error:
            pass
    return n


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_during_a_dask_ingest_is_one_line(tmp_path):
    env = {**os.environ, "RAGRIG_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "ragrig", "ingest", "--no-prefect", "--runner", "dask",
                             "--workers", "2", "--set", f"corpus.path={ROOT / 'datasets' / 'sample'}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while (_workers(proc.pid) < 2 or _sigint_ignored(proc.pid)) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None and _workers(proc.pid) >= 2, "the cluster's workers never started"
        time.sleep(2)  # the cluster is up and the partitions are on their way to the workers
        assert proc.poll() is None, "the ingest ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    # the progress bar's carriage-return lines aside, stderr is the one line
    lines = [ln for ln in err.decode().splitlines() if ln.strip() and "\r" not in ln and "doc/s]" not in ln]
    assert proc.returncode == 130 and lines == ["interrupted"], err.decode()[-3000:]
