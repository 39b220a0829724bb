"""Structured logs: one JSON object per line (``--log-json``), so a slow or empty stage shows up without a
debugger. Events carry their fields under the ``ragrig`` key of ``extra``:

    log.info("stage done", extra={"ragrig": {"event": "stage", "stage": "embed", "seconds": 3.2, ...}})
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "ragrig", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = f"{record.levelname.lower()}: {record.getMessage()}"
        fields = getattr(record, "ragrig", None)
        if isinstance(fields, dict):
            base += " " + " ".join(f"{k}={v}" for k, v in fields.items() if k != "event")
        return base


def configure(json_logs: bool = False, level: str = "WARNING") -> None:
    """Route ragrig's loggers (everything under ``ragrig``) to stderr, as JSON lines or text."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_logs else TextFormatter())
    lg = logging.getLogger("ragrig")
    lg.handlers[:] = [handler]
    lg.setLevel(level.upper())
    lg.propagate = False
