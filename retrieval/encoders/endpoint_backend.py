"""An OpenAI-compatible embeddings endpoint as an encoder (``embedding.backend: openai``): ``POST
<base_url>/embeddings`` with ``{"model": ..., "input": [...]}``, in batches of ``embedding.batch_size``.

- Timeouts, connection errors, 429 and 5xx are retried with exponential back-off (``endpoint.retries``,
  ``endpoint.backoff_s``); anything else is one error naming the URL and the status, never the key.
- The API key is read from the environment variable ``endpoint.api_key_env`` names and sent only as the
  ``Authorization`` header: it is never in the config, the model id, a log line or an error.
- Identity: the model id holds the model name and the endpoint URL, and a **probe digest**: the sha256 of a
  fixed probe sentence's vector rounded to 3 decimals. A server that swaps the weights behind the same name
  gives another id, so the index built with the old model is refused (``Retriever``) and re-embedded by ingest,
  as a local folder with new files is.
- No tokenizer: a text's token count is estimated as ceil(characters / 4) (what chunking needs to fit
  ``endpoint.window``); the endpoint truncates or refuses what it cannot read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import EmbeddingConfig

log = logging.getLogger(__name__)

PROBE = "ragrig model probe: which model answers at this endpoint?"


class EndpointEncoder:
    backend = "openai"

    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.ep = cfg.endpoint
        self.url = self.ep.base_url.rstrip("/") + "/embeddings"
        self._probe: np.ndarray | None = None

    @property
    def window(self) -> int:
        return int(self.ep.window)

    @property
    def dim(self) -> int:
        return int(self.probe.shape[0])

    @property
    def probe(self) -> np.ndarray:
        if self._probe is None:
            self._probe = self._post([PROBE])[0]
        return self._probe

    def probe_digest(self) -> str:
        rounded = np.round(self.probe.astype(np.float64) / max(float(np.linalg.norm(self.probe)), 1e-12), 3) + 0.0
        return hashlib.sha256(rounded.tobytes()).hexdigest()[:12]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [math.ceil(len(t) / 4) for t in texts]

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        rows: list[np.ndarray] = []
        for lo in range(0, len(texts), self.cfg.batch_size):
            rows += self._post(list(texts[lo : lo + self.cfg.batch_size]))
        vecs = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if self.cfg.normalize and len(vecs):
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

    def _post(self, texts: list[str]) -> list[np.ndarray]:
        body = self._request({"model": self.cfg.model, "input": texts})
        try:
            data = sorted(body["data"], key=lambda d: d.get("index", 0))
            vecs = [np.asarray(d["embedding"], dtype=np.float32) for d in data]
        except (KeyError, TypeError, ValueError):
            raise RagrigError(f"embedding endpoint {self.url}: the response has no data[].embedding") from None
        if len(vecs) != len(texts):
            raise RagrigError(f"embedding endpoint {self.url}: {len(vecs)} vectors for {len(texts)} texts")
        return vecs

    def _request(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.ep.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last = ""
        for attempt in range(self.ep.retries + 1):
            if attempt:
                wait = self.ep.backoff_s * 2 ** (attempt - 1)
                log.info("embedding endpoint %s: %s; retry %d in %.1f s", self.url, last, attempt, wait)
                time.sleep(wait)
            try:
                resp = httpx.post(self.url, json=body, headers=headers, timeout=self.ep.timeout_s)
            except httpx.TimeoutException:
                last = f"timed out after {self.ep.timeout_s:g} s"
                continue
            except httpx.HTTPError as exc:
                last = f"unreachable ({type(exc).__name__})"
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise RagrigError(f"embedding endpoint {self.url}: HTTP {resp.status_code}: {resp.text[:200]}")
            try:
                return resp.json()
            except json.JSONDecodeError:
                raise RagrigError(f"embedding endpoint {self.url}: the response is not JSON") from None
        raise RagrigError(f"embedding endpoint {self.url}: {last} ({self.ep.retries + 1} attempts)")
