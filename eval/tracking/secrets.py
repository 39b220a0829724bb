"""Secrets never reach MLflow: params whose key looks like a credential are dropped, and any text equal to a
secret from the environment (a variable whose name looks like a credential) or written into a URL
(``http://user:KEY@host``) is masked as ``***``."""

from __future__ import annotations

import os
import re
from typing import Any

from ragrig.configs.redact import redact

SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential)", re.I)


def env_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if SECRET_KEY.search(k) and v and len(v) >= 6]


def scrub(value: str, secrets: list[str] | None = None) -> str:
    """``value`` with each secret and every URL's credentials (``http://user:KEY@host``) masked."""
    return redact(value, secrets if secrets is not None else env_secrets())


def safe_params(flat: dict[str, Any]) -> dict[str, str]:
    secrets = env_secrets()
    out = {}
    for k, v in flat.items():
        if SECRET_KEY.search(k):
            continue
        out[k] = scrub(str(v), secrets)[:6000]
    return out
