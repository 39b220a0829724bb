"""The served retriever (``create_app`` through FastAPI's TestClient, on a small real index): the same answers as
the library, bad input as a 400 with a message (never a 500), the limits, the token, /health and /metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import re

import pytest

DOCS = {
    "rules/moving.md": "# Moving\n\n## Dash\n\nA dash moves you three more inches.\n\n"
                       "## Climb\n\nClimbing costs double.\n",
    "rules/shooting.md": "# Shooting\n\n## Cover\n\nCover gives one extra defence die.\n\n## Lethal x+\n\n"
                         "Successes on x+ are critical hits.\n",
    "teams/wardens.md": "---\nfaction: Iron Wardens\n---\n# Iron Wardens\n\n"
                        "## Shield Wall\n\nWardens in a line gain cover.\n",
}
QUERIES = ["how far does a dash move", "what does cover give", "lethal 5+", "iron wardens shield wall"]


def _served(root, embedder):
    """A published index over DOCS under ``root`` (its own home), its config and a TestClient on the app (no
    watcher thread)."""
    from fastapi.testclient import TestClient
    from ragrig.configs.load import load_config
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever
    from ragrig.retrieval.serve.app import create_app
    from ragrig.retrieval.serve.live import LiveIndex

    for rel, text in DOCS.items():
        (root / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / rel).write_text(text, encoding="utf-8")
    cfg = load_config(overrides=[f"corpus.path={root / 'corpus'}", f"home={root / 'home'}", "retrieval.synonyms=null",
                                 "eval.testsets=[]", "retrieval.max_hops=0", "retrieval.max_query_chars=1000",
                                 "serve.max_top_k=5", "serve.max_request_bytes=2048", "serve.max_context_tokens=400"])
    pipe = IngestPipeline(cfg, progress=False)
    pipe.embedder = embedder
    pipe.run()
    live = LiveIndex(cfg, Retriever(cfg, embedder=embedder))
    with TestClient(create_app(cfg, live=live, watch=False)) as client:
        yield cfg, live, client


@pytest.fixture
def served(tmp_path, embedder):
    yield from _served(tmp_path, embedder)


@pytest.fixture(scope="module")
def served_once(tmp_path_factory, embedder):
    """The same, once for the module: for the tests that only send requests the app refuses (each built its own
    index and app before, ~0.9 s apiece, 23 of them)."""
    yield from _served(tmp_path_factory.mktemp("served"), embedder)


def test_retrieve_and_context_answer_what_the_library_answers(served):
    from ragrig.retrieval.context import build_context
    from ragrig.retrieval.filters import Filters

    cfg, live, client = served
    r = live.current.retriever
    for q in QUERIES:
        got = client.post("/retrieve", json={"query": q, "top_k": 3})
        assert got.status_code == 200 and got.headers["x-ragrig-index"] == f"{cfg.index_key()}@v000001"
        want = r.search(q, top_k=3, use_cache=False).to_dict()
        body = got.json()
        assert body["hits"] == want["hits"] and body["version"] == "v000001" and body["query"] == q
        assert set(body) == set(want)  # the shape `ragrig query --json` prints
    got = client.post("/retrieve", json={"query": "cover", "filters": {"fm.faction": "Iron Wardens"}}).json()
    assert [h["doc_id"] for h in got["hits"]] == ["teams/wardens.md"]
    assert got["hits"] == r.search("cover", filters=Filters.parse(["fm.faction=Iron Wardens"]),
                                   use_cache=False).to_dict()["hits"]
    ctx = client.post("/context", json={"query": "lethal 5+", "tokens": 60}).json()
    want_ctx = build_context(r.search("lethal 5+", use_cache=False).hits, 60, r.embedder.count_tokens).to_dict()
    assert ctx == {"version": "v000001", **json.loads(json.dumps(want_ctx))}
    assert ctx["text"].startswith("[1] rules/shooting.md — Shooting > Lethal x+") and ctx["tokens"] <= 60


BAD = [  # (body, status, the error message as a regex)
    (b"", 400, r"^the body is not valid JSON"),
    (b"not json", 400, r"^the body is not valid JSON"),
    (b"[1, 2]", 400, r"^Input should be an object$"),
    (b'{"top_k": 3}', 400, r"^query: Field required$"),
    (b'{"query": 5}', 400, r"^query: Input should be a valid string$"),
    (b'{"query": ""}', 400, r"^query is empty$"),
    (b'{"query": "   "}', 400, r"^query is empty$"),
    (b'{"query": "a\\u0000b"}', 400, r"control/invalid character U\+0000 at position 1"),
    (json.dumps({"query": "x" * 1900}).encode(), 400,
     r"query is 1900 characters long; the limit is retrieval\.max_query_chars=1000"),
    (b'{"query": "x", "top_k": 0}', 400, r"^top_k: Input should be greater than or equal to 1$"),
    (b'{"query": "x", "top_k": -3}', 400, r"^top_k: Input should be greater than or equal to 1$"),
    (b'{"query": "x", "top_k": 6}', 400, r"^top_k: 6 is over this server's limit \(serve\.max_top_k=5\)$"),
    (b'{"query": "x", "top_k": "5"}', 400, r"^top_k: Input should be a valid integer$"),
    (b'{"query": "x", "top_k": true}', 400, r"^top_k: Input should be a valid integer$"),
    (b'{"query": "x", "top_k": 1e400}', 400, r"^top_k: Input should be a valid integer$"),
    (b'{"query": "x", "max_hops": 6}', 400, r"^max_hops: Input should be less than or equal to 5$"),
    (b'{"query": "x", "filters": ["nope"]}', 400, r"'nope': expected path=GLOB, format=FMT or fm\.FIELD=VALUE"),
    (b'{"query": "x", "filters": {"colour": "red"}}', 400, r"unknown filter key 'colour'"),
    (b'{"query": "x", "filters": 7}', 400, r"^filters\.list\[str\]: Input should be a valid (list|array)"),
    (b'{"query": "x", "bogus": 1}', 400, r"^bogus: Extra inputs are not permitted$"),
    (b'{"query": "x", "index": "another-index"}', 409, r"serves index .*, the request expects another-index"),
    (b'{"query": "x", "retrieval": "0123456789ab"}', 409, r"retrieval settings \(\w+\) differ from the request's"),
    (b'{"query": "' + b"x" * 3000 + b'"}', 413, r"over this server's limit \(serve\.max_request_bytes=2048\)"),
]


@pytest.mark.parametrize("body, status, message", BAD, ids=[f"{i}-{b[:24]!r}" for i, (b, _, _) in enumerate(BAD)])
def test_bad_input_is_refused_with_a_message_never_a_500(served_once, body, status, message):
    cfg, live, client = served_once
    for path in ("/retrieve", "/context"):
        got = client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert got.status_code == status, (path, got.text)
        assert re.search(message, got.json()["error"]), got.json()
    # the same body without a Content-Type header gets the same answer
    assert client.post("/retrieve", content=body).status_code == status


def test_limits_that_depend_on_the_endpoint_and_the_transfer(served):
    cfg, live, client = served
    got = client.post("/context", json={"query": "cover", "tokens": 401})
    assert got.status_code == 400 and "serve.max_context_tokens=400" in got.json()["error"]
    got = client.post("/retrieve", json={"query": "cover", "tokens": 40})
    assert got.status_code == 400 and got.json()["error"] == "tokens: Extra inputs are not permitted"

    def chunks():  # a chunked body (no Content-Length) over the limit
        yield b'{"query": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}'

    got = client.post("/retrieve", content=chunks(), headers={"Content-Type": "application/json"})
    assert got.status_code == 413
    assert client.get("/nowhere").status_code == 404 and client.get("/retrieve").status_code == 405
    assert client.get("/nowhere").json() == {"error": "Not Found"}


def test_a_bearer_token_when_one_is_configured(served):
    from fastapi.testclient import TestClient
    from ragrig.retrieval.serve.app import create_app

    cfg, live, _ = served
    with TestClient(create_app(cfg, live=live, token="s3cret", watch=False)) as client:
        for path, method in (("/retrieve", "post"), ("/context", "post"), ("/metrics", "get")):
            kw = {"json": {"query": "cover"}} if method == "post" else {}
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
                got = getattr(client, method)(path, headers=headers, **kw)
                assert got.status_code == 401 and got.headers["www-authenticate"] == "Bearer", (path, headers)
                assert "RAGRIG_SERVE_TOKEN" in got.json()["error"]
            assert getattr(client, method)(path, headers={"Authorization": "Bearer s3cret"}, **kw).status_code == 200
        assert client.get("/health").status_code == 200  # probes need no token


def test_health_and_metrics(served):
    cfg, live, client = served
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["index"] == cfg.index_key() and h["version"] == "v000001"
    assert h["model"] == "sentence-transformers/all-MiniLM-L6-v2" and h["documents"] == 3
    assert h["chunks"] == len(live.current.retriever.chunks) and h["switches"] == 0
    for q in QUERIES:
        client.post("/retrieve", json={"query": q})
    client.post("/retrieve", json={"query": QUERIES[0]})  # the query cache
    client.post("/retrieve", json={"query": "x", "top_k": 0})
    text = client.get("/metrics").text
    assert 'ragrig_requests_total{endpoint="/retrieve",status="200"} 5.0' in text
    assert 'ragrig_requests_total{endpoint="/retrieve",status="400"} 1.0' in text
    assert 'ragrig_request_seconds_count{endpoint="/retrieve"} 6.0' in text
    for stage in ("process", "embed", "vector", "bm25", "fuse", "shape", "total"):  # 4 searches, 1 cache hit
        assert f'ragrig_stage_seconds_count{{stage="{stage}"}} 4.0' in text, stage
    assert 'ragrig_stage_seconds_count{stage="queue"} 5.0' in text and "ragrig_cache_hits_total 1.0" in text
    assert re.search(rf'ragrig_index_info{{index="{cfg.index_key()}",model="[^"]+",version="v000001"}} 1\.0', text)
    assert "ragrig_index_switches_total 0.0" in text and "ragrig_in_flight_requests 1.0" in text  # this request


def test_every_search_runs_on_the_one_search_thread_and_its_wait_is_the_queue_stage(served):
    """torch's OpenMP pool belongs to the calling thread: searches on one thread use one pool (two pools made the
    served encoding ~35 % slower, docs/serve-latency.md). Requests that arrive while it is busy wait for it, and
    that wait is the ``queue`` stage."""
    import threading
    import time as clock

    cfg, live, client = served
    r = live.current.retriever
    seen: list[str] = []
    real = r.search

    def slow_search(*a, **kw):
        seen.append(threading.current_thread().name)
        clock.sleep(0.2)
        return real(*a, **kw)

    r.search = slow_search
    try:
        answers: list[int] = []
        callers = [threading.Thread(target=lambda q=q: answers.append(
            client.post("/retrieve", json={"query": q}).status_code)) for q in QUERIES[:3]]
        for t in callers:
            t.start()
        for t in callers:
            t.join(30)
        client.post("/context", json={"query": QUERIES[3], "tokens": 60})
    finally:
        r.search = real
    assert answers == [200, 200, 200] and len(seen) == 4
    assert len(set(seen)) == 1 and seen[0].startswith("ragrig-search")
    text = client.get("/metrics").text
    queued = float(re.search(r'ragrig_stage_seconds_sum{stage="queue"} ([0-9.e+-]+)', text).group(1))
    assert queued >= 0.2 + 0.4 - 0.05  # the 2nd waited one search (0.2 s), the 3rd two, at the least


def test_a_client_that_hangs_up_mid_body_is_not_a_server_error(served, caplog):
    """A probe sent `Content-Length: 100`, half a body, then closed the socket: the server logged "Exception in ASGI
    application" and counted a 500. It is the client's doing: 499 (nginx's "client closed request"), no error."""
    cfg, live, client = served
    messages = iter([{"type": "http.request", "body": b'{"query":', "more_body": True}, {"type": "http.disconnect"}])
    sent: list[dict] = []

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/retrieve", "raw_path": b"/retrieve", "root_path": "", "query_string": b"",
             "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
             "client": ("127.0.0.1", 5), "server": ("127.0.0.1", 80)}
    with caplog.at_level(logging.ERROR):
        asyncio.run(client.app(scope, receive, send))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 499
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    text = client.get("/metrics").text
    assert 'endpoint="/retrieve",status="499"} 1.0' in text and 'status="500"' not in text
