"""Issue 36 defect 12: Prefect's temporary API server (its uvicorn child) dies with a SIGKILLed ingest. Prefect
stops it from an atexit hook, which SIGKILL never runs: it was alive 90 s later. Now it is started with the Linux
parent-death signal (``flows/prefect_server.py``)."""

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


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_prefect_server_dies_with_a_sigkilled_ingest(tmp_path):
    env = {**os.environ, "RAGRIG_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)  # the temporary server, not a configured one
    corpus = ROOT / "datasets" / "sample"
    proc = subprocess.Popen([sys.executable, "-m", "ragrig", "ingest", "--set", f"corpus.path={corpus}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    server = None
    try:
        deadline = time.monotonic() + 120
        while server is None and proc.poll() is None and time.monotonic() < deadline:
            for child in psutil.Process(proc.pid).children(recursive=True):
                try:
                    if "uvicorn" in " ".join(child.cmdline()):
                        server = child
                except psutil.Error:
                    pass
            time.sleep(0.2)
        assert server is not None and proc.poll() is None, "the ingest never started Prefect's server"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        try:
            server.wait(20)  # SIGTERM from the kernel, then uvicorn's shutdown
        except psutil.TimeoutExpired:
            pytest.fail("Prefect's server outlived the SIGKILLed ingest by 20 s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        if server is not None and server.is_running():
            server.kill()
