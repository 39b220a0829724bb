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
    """Route ragrig's loggers (everything under ``ragrig``) to stderr, as JSON lines or text, and keep the
    libraries quiet (``quiet_libraries``) unless ``level`` is DEBUG."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_logs else TextFormatter())
    lg = logging.getLogger("ragrig")
    lg.handlers[:] = [handler]
    lg.setLevel(level.upper())
    lg.propagate = False
    quiet_libraries(debug=level.upper() == "DEBUG", formatter=handler.formatter)


class _LibraryHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root logger's handler: what other libraries log (ERROR and up; everything under DEBUG)."""


def quiet_libraries(debug: bool, formatter: logging.Formatter | None = None) -> None:
    """No third-party warnings or debug lines on the terminal unless ``debug``:

    - Python warnings are ignored except those raised from ragrig's own modules (e.g. Prefect's "Failed to
      create the Prefect home directory", deprecation notices of the libraries we drive);
    - library log records reach stderr at ERROR and up through one root handler, instead of Python's
      last-resort handler (WARNING and up); a library that sets its own logger to DEBUG (bm25s: "Building
      index from tokens") no longer gets through;
    - Prefect's console handler (it replaces the root handlers when Prefect is first imported) prints nothing
      below CRITICAL: a failed flow's error reaches the user once, as the CLI's one line, while Prefect's API
      handler still records it for the UI. ``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL`` set by the user wins.

    Under ``debug`` every one of these shows again."""
    import os
    import warnings

    if not debug:
        warnings.simplefilter("ignore")
        warnings.filterwarnings("default", module=r"ragrig(\.|$)")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "NOTSET" if debug else "CRITICAL")
    root = logging.getLogger()
    handler = _LibraryHandler(sys.stderr)
    handler.setLevel(logging.NOTSET if debug else logging.ERROR)
    if formatter is not None:
        handler.setFormatter(formatter)
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, _LibraryHandler)] + [handler]
