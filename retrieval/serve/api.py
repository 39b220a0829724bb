"""What the server accepts and how it refuses: the request shapes (strict: unknown fields, wrong types and
out-of-range values are errors), the limits (body size, ``top_k``, context tokens), the bearer token, and bad
input as a 400 whose body says what was wrong, in one line: ``{"error": "top_k: ..."}``.

A body over ``serve.max_request_bytes`` is a 413 before it is read in full; a missing or wrong token a 401.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from ragrig.configs.errors import InputError
from ragrig.configs.models import ServeConfig

DEFAULT_CONTEXT_TOKENS = 1500


class RetrieveRequest(BaseModel):
    """``POST /retrieve``: what ``ragrig query`` takes (``filters`` as its ``--filter KEY=VALUE`` items, or as an
    object ``{"path": "teams/*", "fm.faction": "Iron Wardens"}``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    query: str
    top_k: int | None = Field(None, ge=1)
    filters: list[str] | dict[str, str] = Field(default_factory=list)
    max_hops: int | None = Field(None, ge=0, le=5)
    # what the caller expects to be answered by (``ragrig query`` sends its config's): 409 when another is served
    index: str | None = Field(None, max_length=200)
    retrieval: str | None = Field(None, max_length=64)

    def filter_items(self) -> list[str]:
        if isinstance(self.filters, dict):
            return [f"{k}={v}" for k, v in self.filters.items()]
        return list(self.filters)


class ContextRequest(RetrieveRequest):
    """``POST /context``: the same, plus the token budget of the numbered context block (default 1500, as
    ``ragrig query --context``, within ``serve.max_context_tokens``)."""

    tokens: int | None = Field(None, ge=1)

    def budget(self, cfg: ServeConfig) -> int:
        return self.tokens if self.tokens is not None else min(DEFAULT_CONTEXT_TOKENS, cfg.max_context_tokens)


def check_limits(req: RetrieveRequest, cfg: ServeConfig) -> None:
    if req.top_k is not None and req.top_k > cfg.max_top_k:
        raise InputError(f"top_k: {req.top_k} is over this server's limit (serve.max_top_k={cfg.max_top_k})")
    if isinstance(req, ContextRequest) and req.tokens is not None and req.tokens > cfg.max_context_tokens:
        raise InputError(f"tokens: {req.tokens} is over this server's limit "
                         f"(serve.max_context_tokens={cfg.max_context_tokens})")


def validation_message(errors: list[dict[str, Any]]) -> str:
    """Pydantic/FastAPI errors as one line: ``field: message`` for each, ``; ``-joined."""
    parts = []
    for e in errors:
        loc = [str(x) for x in e.get("loc", ()) if x != "body"]
        msg = str(e.get("msg", "invalid"))
        if e.get("type") == "json_invalid":
            msg = "the body is not valid JSON" + (f" ({e['ctx']['error']})" if e.get("ctx", {}).get("error") else "")
        elif e.get("type") == "missing" and not loc:
            msg = "a JSON object body is required"
        parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return "; ".join(parts) or "invalid request"


def authorized(header: str | None, token: str | None) -> bool:
    """No token configured: everyone. Else ``Authorization: Bearer <token>``, compared in constant time."""
    if not token:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


class BodyTooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` is answered 413, by its Content-Length before it is
    read, or (chunked) as soon as the bytes read exceed it."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counted() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"error": f"the request body is over this server's limit "
                                    f"(serve.max_request_bytes={self.max_bytes})"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
