"""``ragrig serve``: the evaluated retriever over HTTP (``retrieval/serve``), on 127.0.0.1 unless told otherwise.

The port is bound first (a port in use fails at once, before the index loads), then the published version is
opened once; the server answers until Ctrl-C / SIGTERM, switching to each newly published version as it appears.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common

def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and ``localhost``; anything else (0.0.0.0, ::, a name, an interface's address) is not."""
    import ipaddress

    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve the retriever over HTTP: /retrieve, /context, /health, /metrics")
    add_common(p)
    p.add_argument("--host", default=None, help="address to listen on (default serve.host: 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default serve.port: 8765; 0 picks a free one)")
    p.add_argument("--allow-no-token", action="store_true",
                   help="serve on a non-loopback host without a bearer token (refused otherwise)")
    p.set_defaults(func=cmd_serve)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or one line saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (choose another --port / --host)")
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets (``http://[::1]:8000``, not ``http://::1:8000``)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def cmd_serve(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    host = args.host or cfg.serve.host
    port = cfg.serve.port if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: expected 0..65535")
    token = os.environ.get(cfg.serve.token_env) or None
    if not is_loopback(host) and token is None:  # decided before anything listens
        if not args.allow_no_token:
            raise InputError(f"--host {host} is not loopback and ${cfg.serve.token_env} is unset: anyone who can "
                             f"reach it could query the index; set ${cfg.serve.token_env} to a bearer token, or pass "
                             "--allow-no-token to serve it open")
        print(f"warning: serving on {host} with no bearer token (--allow-no-token)", file=sys.stderr)
    sock = bind(host, port)
    import uvicorn
    from ragrig.retrieval.serve.app import create_app
    from ragrig.retrieval.serve.threads import choose_torch_threads

    try:
        app = create_app(cfg, token=token)  # opens the published version (a missing index fails here, exit 2)
        # serve.torch_threads (auto: timed on the loaded model now); /health reports the choice
        embedder = app.state.live.current.retriever.embedder
        app.state.torch_threads = app.state.search_thread.submit(
            choose_torch_threads, cfg.serve.torch_threads, lambda q: embedder.encode_queries([q])).result()
    except BaseException:
        sock.close()
        raise
    current = app.state.live.current
    v = current.retriever.version
    bound = sock.getsockname()[1]
    print(f"serving {v.layout.key}@{v.version} ({len(current.retriever.chunks)} chunks, {v.model_id}) on "
          f"http://{url_host(host)}:{bound}{' with a bearer token' if token else ''}; Ctrl-C stops", file=sys.stderr,
          flush=True)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=10)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
