"""The HTTP API over the evaluated retriever (``create_app``; ``ragrig serve`` runs it with uvicorn):

    POST /retrieve   {query, top_k?, filters?, max_hops?} -> the RetrievalResult ``ragrig query --json`` prints
    POST /context    the same + {tokens?} -> {version, text, citations: {n: chunk id}, tokens, dropped}
    GET  /health     index key, version, model, document and chunk counts, switches, uptime (no token needed)
    GET  /metrics    Prometheus text (metrics.py)
    GET  /docs, /openapi.json   the API's description (the same token rule as /metrics)

Every answer comes from one index version (``X-Ragrig-Index: key@version``); a newly published version is
switched to without dropping a request (live.py). Bad input is a 400 ``{"error": "..."}``, never a 500; a body
over the limit a 413; a missing or wrong bearer token (when ``$<serve.token_env>`` is set) a 401; a request that
expects another index or other retrieval settings (``ragrig query`` sends its config's) a 409.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, nullcontext
from typing import Any

from fastapi import FastAPI, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import RagrigConfig, settings_digest
from ragrig.retrieval.context import build_context
from ragrig.retrieval.results import RetrievalResult, json_bytes
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.frozen_heap import frozen_heap
from ragrig.retrieval.search.retriever import Retriever
from ragrig.retrieval.serve.api import (
    BodyLimit,
    ContextRequest,
    RetrieveRequest,
    authorized,
    check_limits,
    validation_message,
)
from ragrig.retrieval.serve.live import LiveIndex, Slot
from ragrig.retrieval.serve.metrics import ServeMetrics
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

log = logging.getLogger(__name__)
ENDPOINTS = ("/retrieve", "/context", "/health", "/metrics")


CLIENT_CLOSED = 499  # nginx's "client closed request": counted apart from the server's own failures (500)


class Unauthorized(RagrigError):
    pass


class Conflict(RagrigError):
    pass


def _body(model: type[RetrieveRequest]) -> dict[str, Any]:
    """The request body's schema for /docs (the endpoints parse the body themselves)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = obj.to_json() if isinstance(obj, RetrievalResult) else json_bytes(obj)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


class Measured:
    """ASGI middleware: each request's count, status and seconds, and the requests in flight (plain ASGI: the
    ``@app.middleware("http")`` form ran every request through an extra task and memory streams, ~1 ms)."""

    def __init__(self, app: Any, metrics: ServeMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        endpoint = scope["path"] if scope["path"] in ENDPOINTS else "other"
        t0 = time.perf_counter()
        status = 500

        async def sent(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, sent)
        finally:
            self.metrics.in_flight.dec()
            self.metrics.request(endpoint, status, time.perf_counter() - t0)


def create_app(cfg: RagrigConfig, live: LiveIndex | None = None, token: str | None = None,
               watch: bool = True) -> FastAPI:
    """The app over ``live`` (default: the published version of ``cfg``'s index, opened now). ``token``: the
    bearer token requests must carry (None: none). ``watch``: poll CURRENT every ``serve.poll_s`` while running."""
    live = live or LiveIndex(cfg)
    metrics = ServeMetrics()
    digest = settings_digest(cfg.retrieval)
    started = time.time()

    def serving(slot: Slot) -> None:
        v = slot.retriever.version
        metrics.serving(v.layout.key, v.version, v.model_id, len(slot.retriever.chunks))

    def switched(old: Slot, new: Slot) -> None:
        metrics.switches.inc()
        serving(new)

    serving(live.current)
    live.listen(switched)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # the loaded index (and model) frozen against the cyclic collector while serving (serve.gc_freeze): a full
        # collection would walk it all (~0.4 s on SciFact) for garbage it never holds; a swap refreezes (live.py)
        with frozen_heap(collect=2) if cfg.serve.gc_freeze else nullcontext():
            if watch:
                live.watch(cfg.serve.poll_s)
            yield
            live.stop()
        search_thread.shutdown(wait=False, cancel_futures=True)

    # /docs and /openapi.json are served below behind the same token rule as /metrics (FastAPI's own are open)
    app = FastAPI(title="ragrig", summary="The evaluated retriever, served", lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.live, app.state.metrics, app.state.torch_threads = live, metrics, None
    # every search runs on this one thread, so searches run one at a time (the encoder and its tokenizer are
    # not safe to call from two threads at once, and on a small machine one search already uses the cores);
    # torch's OpenMP pool belongs to the thread that calls it, so one thread also means one pool, warm from the
    # first request, and ``ragrig serve`` times its thread choice on the same thread (docs/serve-latency.md)
    app.state.search_thread = search_thread = ThreadPoolExecutor(1, thread_name_prefix="ragrig-search")

    async def searched(fn: Callable[..., Response], *args: Any) -> Response:
        return await asyncio.get_running_loop().run_in_executor(search_thread, fn, *args)
    app.add_middleware(BodyLimit, max_bytes=cfg.serve.max_request_bytes)
    app.add_middleware(Measured, metrics=metrics)  # outermost: a 413 is counted too

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Response:
        return _json({"error": validation_message(list(exc.errors()))}, 400)

    @app.exception_handler(InputError)
    async def _bad_input(_: Request, exc: InputError) -> Response:
        return _json({"error": str(exc)}, 400)

    @app.exception_handler(Unauthorized)
    async def _unauthorized(_: Request, exc: Unauthorized) -> Response:
        return _json({"error": str(exc)}, 401, {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(Conflict)
    async def _conflict(_: Request, exc: Conflict) -> Response:
        return _json({"error": str(exc)}, 409)

    @app.exception_handler(RagrigError)
    async def _unavailable(_: Request, exc: RagrigError) -> Response:  # the index cannot answer (e.g. Chroma)
        return _json({"error": str(exc)}, 503)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> Response:
        return _json({"error": str(exc.detail)}, exc.status_code, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> Response:
        log.error("request failed: %s: %s", type(exc).__name__, exc, exc_info=exc)
        return _json({"error": f"internal error: {type(exc).__name__}"}, 500)

    def guard(authorization: str | None) -> None:
        if not authorized(authorization, token):
            raise Unauthorized(f"missing or wrong bearer token (the server reads it from ${cfg.serve.token_env})")

    def answer(req: RetrieveRequest, r: Retriever) -> RetrievalResult:
        """The request's result from ``r`` (on the search thread)."""
        key = r.version.layout.key
        if req.index is not None and req.index != key:
            raise Conflict(f"this server serves index {key}, the request expects {req.index}: start `ragrig serve` "
                           "with the same config, or query the index directly (ragrig query --local)")
        if req.retrieval is not None and req.retrieval != digest:
            raise Conflict(f"this server's retrieval settings ({digest}) differ from the request's "
                           f"({req.retrieval}): start `ragrig serve` with the same config, or query with --local")
        filters = Filters.parse(req.filter_items())
        return r.search(req.query, top_k=req.top_k, filters=filters, max_hops=req.max_hops)

    def answered(req: RetrieveRequest, context_tokens: int | None, submitted: float) -> Response:
        """One request, start to end, on the version it acquired (run on the search thread; ``submitted``: when
        it was handed over, so the wait for the thread is the ``queue`` stage)."""
        waited = time.perf_counter() - submitted
        with live.acquire() as r:
            res = answer(req, r)
            key = r.version.layout.key
            body: RetrievalResult | dict[str, Any] = res
            if context_tokens is not None:  # the tokenizer, like the encoder, on the search thread only
                body = {"version": res.version, **build_context(res.hits, context_tokens,
                                                                 r.embedder.count_tokens).to_dict()}
        metrics.retrieval(res.timings_ms, waited, res.cached)
        return _json(body, headers={"X-Ragrig-Index": f"{key}@{res.version}"})

    async def parsed(request: Request, model: type[RetrieveRequest]) -> RetrieveRequest:
        """The body as ``model`` whatever its Content-Type says (a client that forgets the header gets the same
        answer); a refusal names each bad field."""
        guard(request.headers.get("authorization"))
        try:
            req = model.model_validate_json(await request.body())
        except ClientDisconnect:  # the client hung up before its body arrived: its doing, no server error
            raise HTTPException(CLIENT_CLOSED, "the client closed the connection before its request body arrived") \
                from None
        except ValidationError as exc:
            raise InputError(validation_message(list(exc.errors()))) from None
        check_limits(req, cfg.serve)
        return req

    @app.post("/retrieve", openapi_extra=_body(RetrieveRequest))
    async def retrieve(request: Request) -> Response:
        req = await parsed(request, RetrieveRequest)
        return await searched(answered, req, None, time.perf_counter())

    @app.post("/context", openapi_extra=_body(ContextRequest))
    async def context(request: Request) -> Response:
        req = await parsed(request, ContextRequest)
        assert isinstance(req, ContextRequest)
        return await searched(answered, req, req.budget(cfg.serve), time.perf_counter())

    @app.get("/health")
    def health() -> Response:
        with live.acquire() as r:
            v = r.version
            counts = v.manifest.get("counts", {})
            body = {"status": "ok", "index": v.layout.key, "version": v.version, "model": v.model_id,
                    "documents": counts.get("documents"), "chunks": len(r.chunks), "retrieval": digest,
                    "switches": live.switches, "uptime_s": round(time.time() - started, 1),
                    "torch_threads": app.state.torch_threads.threads if app.state.torch_threads else None}
        return _json(body)

    @app.get("/metrics")
    def prometheus(authorization: str | None = Header(None)) -> Response:
        guard(authorization)
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(authorization: str | None = Header(None)) -> Response:
        guard(authorization)
        return _json(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs(authorization: str | None = Header(None)) -> Response:
        from fastapi.openapi.docs import get_swagger_ui_html

        guard(authorization)
        return get_swagger_ui_html(openapi_url="/openapi.json", title="ragrig")

    return app
