"""Set up each worker process of ragrig's own ``LocalCluster`` (a Dask preload: ``local_cluster_kwargs``).

Ctrl-C in a terminal sends SIGINT to the whole foreground process group, workers included: each printed a
``KeyboardInterrupt`` traceback (69 lines for an ingest on two workers) before the driver's one "interrupted". The
workers ignore SIGINT instead, and do not log the tasks the driver cancels; the driver, which does get it, closes
the client and the cluster, and the cluster stops its workers.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any


class _CancelledTask(logging.Filter):
    """Drops the warning a worker logs for each task the driver cancels as it stops (Ctrl-C, a failed call):
    the driver says what happened, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "ended with CancelledError" not in record.getMessage()


def dask_setup(worker: Any) -> None:
    """Called by Dask in each worker process as it starts."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed.worker.state_machine").addFilter(_CancelledTask())
