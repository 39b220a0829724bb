"""An OpenAI-compatible embeddings endpoint as an encoder (``embedding.backend: openai``): ``POST
<base_url>/embeddings`` with ``{"model": ..., "input": [...]}``, in batches of ``embedding.batch_size``.

- Timeouts, connection errors, 429 and 5xx are retried with exponential back-off (``endpoint.retries``,
  ``endpoint.backoff_s``); anything else is one error naming the URL and the status, never the key.
- The API key is read from the environment variable ``endpoint.api_key_env`` names and sent only as the
  ``Authorization`` header: it is never in the config, the model id, a log line or an error. Credentials in
  ``base_url`` (``http://user:KEY@host/v1``) are sent as HTTP basic auth (``http_json.py``) and are no part
  of the endpoint's name: not of the model id, a message, a file or an answer.
- Every answer is checked where it arrives (``endpoint_answer.py``): ``data`` a list of ``{"embedding":
  [numbers]}`` objects, one per text, each vector as wide as the probe's, finite and not zero. Anything else is
  one error naming the endpoint, the model and what was wrong: never cached, never published, never ranked.
- Identity: the model id holds the model name and the endpoint URL, and a **probe digest**: the sha256 of a
  fixed probe sentence's vector rounded to 3 decimals. A server that swaps the weights behind the same name
  gives another id, so the index built with the old model is refused (``Retriever``) and re-embedded by ingest,
  as a local folder with new files is.
- No tokenizer: a text's token count is estimated as ceil(characters / 4) (what chunking needs to fit
  ``endpoint.window``); the endpoint truncates or refuses what it cannot read.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import EmbeddingConfig
from ragrig.configs.redact import split_credentials
from ragrig.retrieval.http_json import post_json
from ragrig.retrieval.encoders.endpoint_answer import vectors_of

log = logging.getLogger(__name__)

PROBE = "ragrig model probe: which model answers at this endpoint?"


class EndpointEncoder:
    backend = "openai"

    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.ep = cfg.endpoint
        self._target = self.ep.base_url.rstrip("/") + "/embeddings"  # what is called: credentials and all
        self.url = split_credentials(self._target)[0]  # what is shown
        self.where = f"embedding endpoint {self.url} (model {cfg.model!r})"
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
            self._probe = self._post([PROBE], None)[0]
        return self._probe

    def probe_digest(self) -> str:
        rounded = np.round(self.probe.astype(np.float64) / max(float(np.linalg.norm(self.probe)), 1e-12), 3) + 0.0
        return hashlib.sha256(rounded.tobytes()).hexdigest()[:12]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [math.ceil(len(t) / 4) for t in texts]

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        rows: list[np.ndarray] = []
        for lo in range(0, len(texts), self.cfg.batch_size):  # every batch as wide as the probe (or the first)
            width = int(self._probe.shape[0]) if self._probe is not None else len(rows[0]) if rows else None
            rows += self._post(list(texts[lo : lo + self.cfg.batch_size]), width)
        vecs = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if self.cfg.normalize and len(vecs):
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

    def _post(self, texts: list[str], width: int | None) -> list[np.ndarray]:
        """The endpoint's vectors for ``texts``, each checked (``endpoint_answer.py``) and ``width`` wide when
        given."""
        body = self._request({"model": self.cfg.model, "input": texts})
        try:
            return vectors_of(body, len(texts), width)
        except ValueError as exc:
            raise RagrigError(f"{self.where}: {exc}") from None

    def _request(self, body: dict[str, Any]) -> dict[str, Any]:
        """The endpoint's answer (``retrieval/http_json.py``: retried with backoff, the key never in an error)."""
        return post_json(self._target, body, key=os.environ.get(self.ep.api_key_env, ""),
                         timeout_s=self.ep.timeout_s, retries=self.ep.retries, backoff_s=self.ep.backoff_s,
                         where=self.where)

