"""Where the flows' work runs (``flow.runner``): ``local`` (threads in this process) or ``dask``, a
``distributed.LocalCluster`` of ``flow.workers`` processes on 127.0.0.1, or the cluster whose scheduler is
``flow.address``. Two ways in, one cluster setting: ``task_runner_for`` (the Prefect task runner a flow runs its
mapped tasks on: ``tasks/executor.py``'s executor maps onto it) and ``cluster_executor`` (``DaskClient``, the
library's ``Executor`` over a Dask client: a plain ingest's partitions, a sweep's or tune's evaluations; Dask does
the scheduling).

A scheduler that does not answer within ``flow.connect_timeout_s`` (nothing listening, or something that is not a
Dask scheduler) is one line (``SchedulerUnreachable``), before any work starts.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.executor import IN_PROCESS, Executor

T = TypeVar("T")


class SchedulerUnreachable(RagrigError):
    """``flow.address`` names a scheduler that does not answer (exit code 1)."""


class _CancelledReconnect(logging.Filter):
    """Drops the record Dask's client logs when its reconnect to a scheduler that died is cancelled: an ERROR
    with no message, only a traceback. What the user needs is the one line the ingest or sweep raises."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, asyncio.CancelledError) and not record.getMessage().strip())


def _quiet_reconnect() -> None:
    client_log = logging.getLogger("distributed.client")
    if not any(isinstance(f, _CancelledReconnect) for f in client_log.filters):
        client_log.addFilter(_CancelledReconnect())


SCHEDULER_HTTP = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}  # a LocalCluster's ``scheduler_kwargs``


def local_cluster_kwargs(cfg: RagrigConfig) -> dict[str, Any]:
    """``flow.workers`` single-threaded worker processes on loopback, no dashboard, each ignoring Ctrl-C (the
driver handles it: ``cluster_worker``). The scheduler's HTTP server (health and metrics routes, started even
without a dashboard) takes a free loopback port: by default it asks for 8787 and warns "Port 8787 is already in
use" whenever another cluster, or anything else, holds it."""
    return {"n_workers": cfg.flow.workers, "threads_per_worker": 1, "processes": True, "dashboard_address": None,
            "host": "127.0.0.1", "preload": ["ragrig.flows.cluster_worker"],
            "scheduler_kwargs": SCHEDULER_HTTP}


@contextmanager
def _spawning_without_sigint() -> Iterator[None]:
    """SIGINT ignored while the cluster spawns its worker processes, which keep it ignored (Python leaves an
    ignored SIGINT ignored; a blocked one is unblocked at spawn): a Ctrl-C to the terminal's process group then
    never reaches a worker (each, still importing Dask, printed a KeyboardInterrupt traceback). The cost: a Ctrl-C
    in the seconds the cluster takes to start is not seen; one after it interrupts the run. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def local_cluster(**kwargs: Any) -> Any:
    """A ``distributed.LocalCluster`` whose workers never see Ctrl-C (``_spawning_without_sigint``; the
    ``cluster_worker`` preload ignores it in a worker restarted later); the Prefect task runner's ``cluster_class``
    too."""
    from distributed import LocalCluster

    with _spawning_without_sigint():
        return LocalCluster(**kwargs)


def check_scheduler(address: str, timeout_s: float) -> None:
    """Raise ``SchedulerUnreachable`` unless a Dask scheduler answers at ``address`` within ``timeout_s``, all told:
    something accepts a connection (a refusal is one line at once, where Dask's client would retry for its
    connect timeout and print a traceback), then completes Dask's handshake and says it is a scheduler (Dask's
    own handshake read has no timeout: a plain TCP listener or an HTTP server there kept the client waiting
    forever)."""
    deadline = time.monotonic() + timeout_s
    parts = urlsplit(address)  # flow.address was validated with the config (configs/models.py)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 8786), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise SchedulerUnreachable(f"flow.address {address}: no Dask scheduler answers ({reason}, waited up to "
                                   f"{timeout_s:g} s); start one (`dask scheduler`) or drop --address") from None
    kind = _identify(address, max(deadline - time.monotonic(), 0.1))
    if kind is None:
        raise SchedulerUnreachable(f"flow.address {address}: something listens there but it is not a Dask scheduler "
                                   f"(no Dask handshake within {timeout_s:g} s); check the host and port")
    if kind != "Scheduler":
        raise InputError(f"flow.address {address}: a Dask {kind} answers there, not a scheduler; give the "
                         "scheduler's address (`dask scheduler` prints it)")


def _identify(address: str, timeout_s: float) -> str | None:
    """What Dask server answers at ``address`` (``Scheduler``, ``Worker``, ...; None: no Dask handshake and
    identity reply within ``timeout_s``). Runs on its own thread and event loop: callable from inside one."""
    got: list[str | None] = [None]

    async def ask() -> None:
        from distributed.comm import connect

        comm = await connect(address, timeout=timeout_s)
        try:
            await comm.write({"op": "identity", "reply": True})
            reply = await comm.read()
            got[0] = str(reply.get("type")) if isinstance(reply, dict) and reply.get("type") else None
        finally:
            comm.abort()

    def run() -> None:
        try:
            asyncio.run(asyncio.wait_for(ask(), timeout_s))
        except Exception:  # a timeout, a closed connection, bytes that are not Dask's: not a scheduler
            got[0] = None

    t = threading.Thread(target=run, name="ragrig-check-scheduler", daemon=True)
    t.start()
    t.join(timeout_s + 1.0)
    return got[0]


def task_runner_for(cfg: RagrigConfig) -> Any:
    if cfg.flow.runner == "local":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=cfg.flow.workers)
    from prefect_dask import DaskTaskRunner

    _quiet_reconnect()
    if cfg.flow.address:
        check_scheduler(cfg.flow.address, cfg.flow.connect_timeout_s)
        return DaskTaskRunner(address=cfg.flow.address, client_kwargs={"timeout": cfg.flow.connect_timeout_s})
    return DaskTaskRunner(cluster_class=local_cluster, cluster_kwargs=local_cluster_kwargs(cfg))


class DaskClient(Executor):
    """The library's ``Executor`` over a Dask client: ``map`` submits every call at once (the scheduler places
    them) and yields the results in the calls' order; a failed call cancels the rest. The steps (``call``) run
    through ``steps``: here, or as Prefect tasks in a flow."""

    distributed = True

    def __init__(self, client: Any, steps: Executor = IN_PROCESS) -> None:
        self.client = client
        self.steps = steps

    def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        return self.steps.call(name, fn, *args)

    def map(self, name: str, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> Iterator[T]:
        futures = [self.client.submit(fn, *args, pure=False) for args in calls]
        try:
            for fut in futures:
                yield fut.result()
        finally:
            self.client.cancel(futures)  # a failed call: the others stop too (no-op for those already done)


@contextmanager
def cluster_executor(cfg: RagrigConfig, steps: Executor = IN_PROCESS) -> Iterator[Executor]:
    """The configured cluster as an ``Executor`` for as long as the block runs: ``steps`` itself with the local
    runner (everything in this process), else a ``DaskClient`` on a LocalCluster of ``flow.workers`` processes
    or the scheduler at ``flow.address`` (checked first: ``check_scheduler``)."""
    if cfg.flow.runner == "local":
        yield steps
        return
    from distributed import Client

    _quiet_reconnect()
    if cfg.flow.address:
        check_scheduler(cfg.flow.address, cfg.flow.connect_timeout_s)
        cluster, client = None, Client(cfg.flow.address, timeout=cfg.flow.connect_timeout_s)
    else:
        cluster = local_cluster(**local_cluster_kwargs(cfg))
        client = Client(cluster)
    try:
        yield DaskClient(client, steps)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
