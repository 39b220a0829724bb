"""A loopback stand-in for an OpenAI-compatible embeddings endpoint (``embedding.backend: openai``), shared by
the encoder's tests and the hostile-endpoint ones: vectors are a function of (text, weights), and a test can
script failures, whole answers, or a body that drips one byte at a time."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class EmbedStub:
    """Vectors are a function of (text, weights): changing ``weights`` is a server swapping its model."""

    def __init__(self) -> None:
        self.fail: list[int] = []  # statuses to answer before succeeding
        self.weights = "v1"
        self.width = 8  # values per vector (at most 32)
        # the answer to a request's inputs, instead of their vectors: a dict or list is sent as JSON, bytes as is
        self.answer: Callable[[list[str]], object] | None = None
        self.drip_s: float | None = None  # send the headers, then the body one byte every drip_s seconds
        self.requests: list[dict] = []
        self.headers: list[dict] = []

    def vector(self, text: str) -> list[float]:
        h = hashlib.sha256(f"{self.weights}:{text}".encode()).digest()
        return [b / 255 - 0.5 for b in h[: self.width]]

    def payload(self, texts: list[str], vector: Callable[[str], object] | None = None) -> dict:
        """The answer for ``texts``, each embedding ``vector(text)`` (default: ``self.vector``)."""
        fn = vector or self.vector
        return {"data": [{"index": i, "embedding": fn(t)} for i, t in enumerate(texts)]}


@pytest.fixture
def embed_stub() -> Iterator[tuple[EmbedStub, str]]:
    """(the stub's script and records, its base URL); stopped after the test. A dripping answer stops after 60
    bytes or when the client hangs up."""
    state = EmbedStub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            if state.fail:
                status, payload = state.fail.pop(0), {"error": "busy"}
            else:
                status = 200
                payload = state.answer(body["input"]) if state.answer else state.payload(body["input"])
            raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw) if state.drip_s is None else 10_000))
            self.end_headers()
            if state.drip_s is None:
                self.wfile.write(raw)
                return
            for byte in (b" " * 60):
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(state.drip_s)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the loop's next poll: serve_forever's default 0.5 s was half a second a test
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
