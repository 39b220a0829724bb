"""Ctrl-C that a library swallowed is still honoured.

Python raises ``KeyboardInterrupt`` wherever the main thread is when SIGINT arrives. During an import that is
often inside a library's optional-import guard (``except Exception``), or inside a class body, where Python 3.11
wraps it in a ``RuntimeError`` ("Error calling __set_name__ ...") that such a guard then swallows: the run went
on and ended with exit 0, or failed with that RuntimeError (seen with ``ragrig tune``, Ctrl-C while scipy.stats
was being imported). ``install`` makes SIGINT also set a flag; ``check`` (called between the steps of long work:
each sweep config, each index group) raises ``KeyboardInterrupt`` when the flag is set, and ``seen`` tells the
command line that an error was really an interrupt. Main thread only; ``restore`` puts the old handler back.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_requested = False


def _on_sigint(signum: int, frame: Any) -> None:
    global _requested
    _requested = True
    raise KeyboardInterrupt


def install() -> Any:
    """Handle SIGINT with the flag (cleared now); returns the previous handler (None off the main thread)."""
    global _requested
    _requested = False
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, _on_sigint)


def restore(previous: Any) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, previous)


def seen() -> bool:
    """Whether SIGINT arrived since ``install``."""
    return _requested


def check() -> None:
    """Raise ``KeyboardInterrupt`` if SIGINT arrived since ``install`` (a library may have swallowed the first)."""
    if _requested:
        raise KeyboardInterrupt
