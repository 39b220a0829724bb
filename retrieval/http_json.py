"""POST a JSON body to an OpenAI-compatible endpoint and read its JSON answer, with retries: what the LLM judge
(``/chat/completions``) and the embeddings endpoint encoder (``/embeddings``) share.

- ``timeout_s`` bounds a whole attempt: connecting, sending, the headers and the entire body. httpx's own
  timeout is per socket read, so a server that sends its headers and then one byte a second would never time
  out; here the attempt runs in a helper thread the caller stops waiting for at the deadline (the thread
  itself gives up at its next read). The whole call therefore ends within ``(retries + 1) * timeout_s`` plus
  the back-off waits.
- Timeouts, connection errors, 429 and 5xx are retried with exponential backoff (``backoff_s``, doubled each
  time); any other status, or an answer that is not UTF-8 JSON, is one ``RagrigError`` that starts with
  ``where``.
- Credentials in the URL (``http://user:KEY@host/v1``) are sent as HTTP basic auth, as curl sends them, and
  the request goes to the URL without them; ``key`` (when set) is sent as a bearer token unless the URL has
  credentials (one ``Authorization`` header). Every error text has the key and the URL's credentials masked
  (an endpoint may echo the key in its body), so no warning, JSON field or served answer built from it shows
  them."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ragrig.configs.errors import RagrigError
from ragrig.configs.redact import redact, split_credentials, url_secrets
from ragrig.retrieval.json_loads import loads

log = logging.getLogger(__name__)


class _Deadline(Exception):
    """The attempt's whole-request deadline passed."""


def _exchange(url: str, body: dict[str, Any], headers: dict[str, str], auth: tuple[str, str] | None,
              timeout_s: float) -> tuple[int, bytes]:
    """(status, whole body) of one POST, or ``_Deadline`` when it takes longer than ``timeout_s`` in all."""
    import httpx

    deadline = time.monotonic() + timeout_s
    box: dict[str, Any] = {}

    def attempt() -> None:
        try:
            with httpx.stream("POST", url, json=body, headers=headers, auth=auth, timeout=timeout_s) as resp:
                parts = []
                for part in resp.iter_bytes():
                    if time.monotonic() > deadline:  # a dripping body: stop reading (the caller has gone)
                        raise _Deadline
                    parts.append(part)
                box["out"] = (resp.status_code, b"".join(parts))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            box["err"] = exc

    worker = threading.Thread(target=attempt, name="ragrig-http", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        raise _Deadline
    if "err" in box:
        raise box["err"]
    return box["out"]


def post_json(url: str, body: dict[str, Any], *, key: str, timeout_s: float, retries: int, backoff_s: float,
              where: str) -> Any:
    """The endpoint's JSON answer to ``body`` (``key``: sent as a bearer token when set; ``where``: how errors
    name the endpoint, e.g. ``"LLM judge at <url>"``)."""
    import httpx

    secrets = [s for s in (key, *url_secrets(url)) if s]
    bare, auth = split_credentials(url)

    def fail(text: str) -> RagrigError:
        return RagrigError(redact(f"{where}: {text}", secrets))

    headers = {"Content-Type": "application/json"}
    if key and auth is None:
        headers["Authorization"] = f"Bearer {key}"
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            wait = backoff_s * 2 ** (attempt - 1)
            log.info(redact(f"{where}: {last}; retry {attempt} in {wait:.1f} s", secrets))
            time.sleep(wait)
        try:
            status, raw = _exchange(bare, body, headers, auth, timeout_s)
        except (_Deadline, httpx.TimeoutException):
            last = f"timed out after {timeout_s:g} s"
            continue
        except httpx.HTTPError as exc:
            last = f"unreachable ({type(exc).__name__}: {exc})"
            continue
        if status == 429 or status >= 500:
            last = f"HTTP {status}"
            continue
        if status >= 400:
            raise fail(f"HTTP {status}: {raw[:200].decode('utf-8', 'replace')}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(f"the response is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})") from None
        try:
            return loads(text)
        except ValueError:
            raise fail(f"the response is not JSON: {text[:200]!r}") from None
    raise fail(f"{last} ({retries + 1} attempts)")
