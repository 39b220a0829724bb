"""What the benchmarks that start servers share: stopping a child started with ``start_new_session=True``
(its own process group) together with everything it started. (tests/ops/servers.stop_group is the same for the
tests, which do not import from benchmarks/.)"""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGTERM the process group of ``proc``; SIGKILL it if ``proc`` has not exited after ``grace_s``."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
