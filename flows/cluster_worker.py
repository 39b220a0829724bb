"""Set up each worker process of ragrig's own ``LocalCluster`` (a Dask preload: ``local_cluster_kwargs``).

Ctrl-C in a terminal sends SIGINT to the whole foreground process group, workers included: each printed a
``KeyboardInterrupt`` traceback (69 lines for an ingest on two workers) before the driver's one "interrupted". The
workers never see SIGINT (``runners.local_cluster`` spawns them with it ignored; this preload ignores it in a worker
restarted later) and do not log the noise of being stopped (``SHUTDOWN_NOISE``); the driver, which does get it,
closes the client and the cluster, and the cluster stops its workers.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any


SHUTDOWN_NOISE = ("ended with CancelledError", "Failed to communicate with scheduler during heartbeat")
"""What a worker logs when the driver stops (Ctrl-C, a failed call): a warning per task it cancels, and a
traceback when its heartbeat meets the scheduler already closed. The driver says what happened, in one line."""


class _ShutdownNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(s in message for s in SHUTDOWN_NOISE)


def dask_setup(worker: Any) -> None:
    """Called by Dask in each worker process as it starts."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("distributed.worker", "distributed.worker.state_machine"):
        logging.getLogger(name).addFilter(_ShutdownNoise())
