"""Prefect's temporary API server (its "ephemeral" uvicorn child, started when no ``PREFECT_API_URL`` is set)
dies with this process. Prefect stops it from an ``atexit`` hook, which a SIGKILLed (or OOM-killed) ingest never
runs: the server stayed alive, holding its port and Prefect's database, long after the ingest had gone.

``start_ephemeral_server`` starts that server itself, from the main thread, before the first flow, with the
Linux parent-death signal set in the child (``prctl(PR_SET_PDEATHSIG, SIGTERM)`` between fork and exec): when
this process dies, however it dies, the kernel sends the server SIGTERM. The server gets a process group of its
own, so a Ctrl-C in the terminal (SIGINT to the foreground group) interrupts the run, not the server under it (the
run then failed with "Connection refused" instead of "interrupted"). It is Prefect's own server object (a
per-process singleton), so Prefect's flows find it running and use it; elsewhere than Linux it is left to Prefect.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> None:
    """In a child between fork and exec: a process group of its own (Ctrl-C in the terminal reaches this process,
    which stops the server at exit, not the server in the middle of a flow), and SIGTERM from the kernel when the
    parent dies (no start at all when it already has: the signal only covers a death after it is set)."""
    os.setpgrp()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


class _PopenDyingWithUs:
    """The ``subprocess`` module as Prefect's server module sees it while it starts its server: every ``Popen``
    gets ``die_with_parent``."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def Popen(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 - subprocess's name
        return self._real.Popen(*args, preexec_fn=die_with_parent, **kwargs)


def start_ephemeral_server() -> None:
    """Start Prefect's temporary server now, dying with this process (Linux, main thread, no PREFECT_API_URL);
    a no-op otherwise or when it already runs."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    import prefect.server.api.server as server_module

    server = server_module.SubprocessASGIServer()
    if server.running:
        return
    real = server_module.subprocess
    server_module.subprocess = _PopenDyingWithUs(real)  # type: ignore[assignment]
    try:
        server.start()
    finally:
        server_module.subprocess = real
