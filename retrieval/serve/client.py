"""Asking a running ``ragrig serve`` (what ``ragrig query`` does when a server is configured). Standard library
only: a query through a server pays for no torch, Chroma or FastAPI import.

Errors come back as the CLI's: the server's 400/401/409/413 as ``InputError`` (exit 2) with the server's own
message; an unreachable server or a 5xx as ``RagrigError`` (exit 1), naming the URL and where it was configured.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import RagrigConfig

URL_ENV = "RAGRIG_SERVER_URL"


def server_url(cfg: RagrigConfig) -> str | None:
    """The server ``ragrig query`` should ask: ``$RAGRIG_SERVER_URL``, else ``serve.url``, else None (local)."""
    env = os.environ.get(URL_ENV, "").strip()
    if env:
        check_url(env, f"${URL_ENV}")
    elif cfg.serve.url:
        check_url(cfg.serve.url, "serve.url")
    url = env or cfg.serve.url
    return url.rstrip("/") if url else None


def check_url(url: str, where: str) -> None:
    """An http(s) URL with a host and a port in range, no control characters or spaces; else one line naming
    ``where`` (serve.url's own pattern checks only the scheme)."""
    from urllib.parse import urlsplit

    problem = None
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        problem = "has spaces or control characters"
    else:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            problem = str(exc)
        else:
            if parts.scheme not in ("http", "https") or not parts.hostname:
                problem = "is not an http:// or https:// URL with a host"
            elif port is not None and not 0 < port < 65536:
                problem = f"port {port} is out of range"
    if problem:
        raise InputError(f"{where} {url!r} {problem} (e.g. http://127.0.0.1:8000)")


def post(cfg: RagrigConfig, url: str, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """POST ``payload`` as JSON to ``url + path``; the decoded answer and its headers."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    token = os.environ.get(cfg.serve.token_env)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url + path, data=json.dumps(payload).encode(), headers=headers, method="POST")
    where = f"the ragrig server at {url} (${URL_ENV} or serve.url)"
    try:
        with urllib.request.urlopen(req, timeout=cfg.serve.timeout_s) as resp:
            return json.loads(resp.read()), dict(resp.headers.items())
    except urllib.error.HTTPError as exc:
        message = _error_message(exc)
        if exc.code in (400, 401, 409, 413):
            hint = f" (set ${cfg.serve.token_env})" if exc.code == 401 else ""
            raise InputError(f"{where} refused the query: {message}{hint}") from None
        raise RagrigError(f"{where} failed: HTTP {exc.code}: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RagrigError(f"cannot reach {where}: {reason}; start `ragrig serve`, or query the index directly "
                          "with --local") from None


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("error") or exc.reason)
    except Exception:
        return str(exc.reason)
