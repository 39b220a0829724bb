"""Start real servers for tests on 127.0.0.1 in their own process group, and stop the whole group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_group(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM the process group of ``proc`` (started with ``start_new_session=True``); SIGKILL it if ``proc``
    has not exited after ``grace_s``."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@contextmanager
def server(cmd: list[str], health_url: str, timeout_s: float = 60.0, log: Path | None = None,
           env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited with {proc.returncode} before it was healthy")
            try:
                with urllib.request.urlopen(health_url, timeout=2) as r:
                    if r.status < 500:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{cmd[0]} not healthy at {health_url} after {timeout_s:.0f} s")
            time.sleep(0.1)  # (each poll is one HTTP request)
        yield proc
    finally:
        stop_group(proc)
        if log:
            out.close()  # type: ignore[union-attr]


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    """An ``mlflow server`` on 127.0.0.1 (a free port; its SQLite store, artifacts and log under ``folder``) for as
    long as the block runs: its URL. Started without MLflow 3's job execution (a job runner and a huey consumer
    with 10 workers, for its GenAI jobs; nothing ragrig logs uses them), which cost ~15 s of CPU and 8 more
    processes at every start (measured 2026-11-28: 19.5-23.3 s against 5.4-5.8 s, up in 6.5-8.4 s against
    5.5-5.9 s)."""
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with server([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                 "--backend-store-uri", f"sqlite:///{folder / 'server.db'}", "--default-artifact-root",
                 str(folder / "artifacts"), "--workers", "1"], f"http://127.0.0.1:{port}/health", timeout_s=120,
                log=folder / "mlflow.log", env=env):
        yield f"http://127.0.0.1:{port}"
