"""Ctrl-C that a library swallowed is still honoured.

Python raises ``KeyboardInterrupt`` wherever the main thread is when SIGINT arrives. During an import that is
often inside a library's optional-import guard (``except Exception``), or inside a class body, where Python 3.11
wraps it in a ``RuntimeError`` ("Error calling __set_name__ ...") that such a guard then swallows: the run went
on and ended with exit 0, or failed with that RuntimeError (seen with ``ragrig tune``, Ctrl-C while scipy.stats
was being imported). ``install`` makes SIGINT also set a flag; ``check`` (called between the steps of long work:
each sweep config, each index group) raises ``KeyboardInterrupt`` when the flag is set, and ``seen`` tells the
command line that an error was really an interrupt. Main thread only; ``restore`` puts the old handlers back.

SIGTERM (a scheduler's or a supervisor's stop: systemd, Kubernetes, ``kill``) is handled the same way, so the same
clean-up runs (an adapt's temp and scratch folders removed, an ingest's staging, an MLflow run marked KILLED): by
default Python dies of it at once, running no ``finally``. ``terminated`` tells the command line to end the
process by the signal afterwards, as a supervisor expects.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_requested = False
_signal: int | None = None
HANDLED = (signal.SIGINT, signal.SIGTERM)


def _on_signal(signum: int, frame: Any) -> None:
    global _requested, _signal
    _requested = True
    _signal = signum
    raise KeyboardInterrupt


def install() -> Any:
    """Handle SIGINT and SIGTERM with the flag (cleared now); returns the previous handlers (None off the main
    thread)."""
    global _requested, _signal
    _requested, _signal = False, None
    if threading.current_thread() is not threading.main_thread():
        return None
    return {sig: signal.signal(sig, _on_signal) for sig in HANDLED}


def restore(previous: Any) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def terminated() -> bool:
    """Whether the interrupt was SIGTERM (the process should then end by it, once cleaned up)."""
    return _signal == signal.SIGTERM


def seen() -> bool:
    """Whether SIGINT arrived since ``install``."""
    return _requested


def check() -> None:
    """Raise ``KeyboardInterrupt`` if SIGINT arrived since ``install`` (a library may have swallowed the first)."""
    if _requested:
        raise KeyboardInterrupt
