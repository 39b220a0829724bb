"""Issue 36 defect 6: ``--address`` at something that is not a Dask scheduler. A plain TCP listener or an HTTP
server passed the connect check and then kept the client waiting forever (Dask's handshake read has no timeout);
now it fails within ``flow.connect_timeout_s``, one line. ``tcp://[::1`` and ``tls://…`` are one line, exit 2,
when the config is read (tls is refused: ragrig has no TLS settings)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config
from ragrig.flows.cli import main
from ragrig.flows.runners import SchedulerUnreachable, check_scheduler


@contextmanager
def silent_listener() -> Iterator[str]:
    """A TCP server on loopback that accepts every connection and never sends a byte."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        srv.close()


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def http_server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    srv.timeout = 0.5
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    try:
        yield f"tcp://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


@pytest.mark.parametrize("server", [silent_listener, http_server], ids=["tcp-listener", "http-server"])
def test_something_that_is_not_a_scheduler_fails_within_the_connect_timeout(server):
    with server() as address:
        t0 = time.monotonic()
        with pytest.raises(SchedulerUnreachable, match="not a Dask scheduler") as exc:
            check_scheduler(address, 0.5)
        took = time.monotonic() - t0
    assert "\n" not in str(exc.value) and address in str(exc.value)
    assert took < 0.5 + 2.0  # the connect timeout, with slack for a loaded machine: not Dask's 30 s, not forever


def _sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "ts.yaml").write_text("name: t\ncases:\n  - id: a\n    query: q\n    expect: [{doc: a.md}]\n")
    (tmp_path / "s.yaml").write_text(f"name: s\nset: ['eval.testsets=[{tmp_path / 'ts.yaml'}]']\n"
                                     "grid:\n  retrieval.top_k: [5, 10]\n")
    return tmp_path / "s.yaml"


def test_a_sweep_at_a_tcp_listener_is_one_line_before_any_work(tmp_path, capsys):
    with silent_listener() as address:
        t0 = time.monotonic()
        code = main(["sweep", str(_sweep_file(tmp_path)), "--no-prefect", "-q", "--address", address,
                     "--set", "flow.connect_timeout_s=0.5"])
        took = time.monotonic() - t0
    err = capsys.readouterr().err.strip()
    assert code == 1 and took < 60  # the 0.5 s check plus start-up imports on a loaded machine; before: forever
    assert err.count("\n") == 0 and err.startswith(f"error: flow.address {address}: something listens there")
    assert not (tmp_path / "ragrig-home" / "indexes").exists()  # nothing ingested


@pytest.mark.parametrize("address, says", [
    ("tcp://[::1", "Invalid IPv6 URL"),
    ("tcp://h:99999", "Port out of range"),
    ("tcp://:8786", "not a scheduler address"),
    ("tls://127.0.0.1:8786", "tls:// is not supported"),
])
def test_a_malformed_or_tls_address_is_refused_with_the_config(address, says):
    with pytest.raises(InputError, match="flow.address") as exc:
        load_config(overrides=["flow.runner=dask", f"flow.address={address}"])
    assert says in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("address", ["tcp://[::1", "tls://127.0.0.1:8786"])
def test_the_cli_exits_2_on_them(address, capsys):
    assert main(["ingest", "--no-prefect", "--address", address]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "flow.address" in err


def test_bracketed_ipv6_and_hostnames_still_parse():
    for address in ("tcp://[::1]:8786", "tcp://scheduler.internal:8786", "tcp://10.0.0.5"):
        assert load_config(overrides=["flow.runner=dask", f"flow.address={address}"]).flow.address == address


@pytest.mark.slow
def test_a_real_scheduler_passes_and_a_worker_is_named():
    from distributed import LocalCluster
    from ragrig.flows.runners import SCHEDULER_HTTP

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                      host="127.0.0.1", protocol="tcp://", scheduler_kwargs=SCHEDULER_HTTP) as cluster:
        check_scheduler(cluster.scheduler_address, 10.0)
        worker = next(iter(cluster.scheduler.workers))
        with pytest.raises(InputError, match="a Dask Worker answers there, not a scheduler"):
            check_scheduler(worker, 10.0)
