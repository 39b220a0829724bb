"""POST a JSON body to an OpenAI-compatible endpoint and read its JSON answer, with retries: what the LLM judge
(``/chat/completions``) and the embeddings endpoint encoder (``/embeddings``) share.

Timeouts, connection errors, 429 and 5xx are retried with exponential backoff (``backoff_s``, doubled each
time); any other status, or an answer that is not JSON, is one ``RagrigError`` that starts with ``where``. Every
error text has the API key and the URL's credentials masked (an endpoint may echo the key in its body; a URL may
carry ``user:KEY@``), so no warning, JSON field or served answer built from it shows them."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from ragrig.configs.errors import RagrigError
from ragrig.configs.redact import redact, url_secrets

log = logging.getLogger(__name__)


def post_json(url: str, body: dict[str, Any], *, key: str, timeout_s: float, retries: int, backoff_s: float,
              where: str) -> Any:
    """The endpoint's JSON answer to ``body`` (``key``: sent as a bearer token when set; ``where``: how errors
    name the endpoint, e.g. ``"LLM judge at <url>"``)."""
    import httpx

    secrets = [s for s in (key, *url_secrets(url)) if s]

    def fail(text: str) -> RagrigError:
        return RagrigError(redact(f"{where}: {text}", secrets))

    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            wait = backoff_s * 2 ** (attempt - 1)
            log.info(redact(f"{where}: {last}; retry {attempt} in {wait:.1f} s", secrets))
            time.sleep(wait)
        try:
            resp = httpx.post(url, json=body, headers=headers, timeout=timeout_s)
        except httpx.TimeoutException:
            last = f"timed out after {timeout_s:g} s"
            continue
        except httpx.HTTPError as exc:
            last = f"unreachable ({type(exc).__name__}: {exc})"
            continue
        if resp.status_code == 429 or resp.status_code >= 500:
            last = f"HTTP {resp.status_code}"
            continue
        if resp.status_code >= 400:
            raise fail(f"HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            return resp.json()
        except json.JSONDecodeError:
            raise fail(f"the response is not JSON: {resp.text[:200]!r}") from None
    raise fail(f"{last} ({retries + 1} attempts)")
