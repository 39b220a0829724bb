"""Secrets never reach MLflow: params whose key looks like a credential are dropped, and any text equal to a
secret from the environment (a variable whose name looks like a credential) is masked as ``***``."""

from __future__ import annotations

import os
import re
from typing import Any

SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential)", re.I)


def env_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if SECRET_KEY.search(k) and v and len(v) >= 6]


def scrub(value: str, secrets: list[str] | None = None) -> str:
    for s in secrets if secrets is not None else env_secrets():
        value = value.replace(s, "***")
    return value


def safe_params(flat: dict[str, Any]) -> dict[str, str]:
    secrets = env_secrets()
    out = {}
    for k, v in flat.items():
        if SECRET_KEY.search(k):
            continue
        out[k] = scrub(str(v), secrets)[:6000]
    return out
