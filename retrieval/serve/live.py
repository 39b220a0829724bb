"""The index version a server answers from, switched to a newly published one without dropping a request.

    live = LiveIndex(cfg)               # opens the published version once (the model loads once, too)
    with live.acquire() as r:           # one version for the whole request: r.version.version
        r.search(...)
    live.check()                        # CURRENT names another version? open it, then swap (watch() polls this)

A request holds the ``Slot`` it acquired until it finishes; ``check`` opens the new version beside the old one
(reusing the loaded model), then swaps the current slot under a lock, so a request sees the old version or the
new one, never both. The old slot is released when its last request finishes; inside the server's frozen heap
(``frozen_heap``, app.py) the release refreezes, so the old version's reference cycles are collected and the new
version is frozen in its place. Opening a version that fails
(e.g. pruned meanwhile) keeps the old one and is retried on the next poll, logged once per version.

Searches themselves run one at a time on the app's search thread (app.py), which this does not need to know.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.frozen_heap import refreeze
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.search.retriever import Retriever

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Slot:
    """One open version and the requests answering from it."""

    retriever: Retriever
    opened_at: float = field(default_factory=time.time)
    in_flight: int = 0
    retired: bool = False

    @property
    def version(self) -> str:
        return self.retriever.version.version


class LiveIndex:
    def __init__(self, cfg: RagrigConfig, retriever: Retriever | None = None) -> None:
        self.cfg = cfg
        self.layout = Layout(cfg)
        self._lock = threading.Lock()
        self._slot = Slot(retriever or Retriever(cfg))
        self.switches = 0
        self.released: list[str] = []  # versions let go of, oldest first (their last request finished)
        self._failed: str | None = None  # the version that last failed to open (logged once)
        self._listeners: list[Callable[[Slot, Slot], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def current(self) -> Slot:
        return self._slot

    @contextmanager
    def acquire(self) -> Iterator[Retriever]:
        """The current version's retriever, kept open until the ``with`` block ends."""
        with self._lock:
            slot = self._slot
            slot.in_flight += 1
        try:
            yield slot.retriever
        finally:
            with self._lock:
                slot.in_flight -= 1
                done = slot.retired and slot.in_flight == 0
            if done:
                self._release(slot)

    def listen(self, fn: Callable[[Slot, Slot], None]) -> None:
        """Call ``fn(old, new)`` after each switch (the server's metrics)."""
        self._listeners.append(fn)

    def in_flight(self) -> int:
        with self._lock:
            return self._slot.in_flight

    def check(self) -> bool:
        """One look at CURRENT: when it names another complete version, open it and make it current. True when
        it switched."""
        version = self.layout.current_version()
        if version is None or version == self._slot.version:
            return False
        try:
            opened = IndexVersion(self.cfg, self.layout, version)
            new = Retriever(self.cfg, opened, embedder=self._slot.retriever.embedder)
        except Exception as exc:
            if self._failed != version:
                log.warning("cannot open index version %s yet (%s: %s); still serving %s", version,
                            type(exc).__name__, exc, self._slot.version)
                self._failed = version
            return False
        fresh = Slot(new)
        with self._lock:
            old, self._slot = self._slot, fresh
            old.retired = True
            idle = old.in_flight == 0
            self.switches += 1
        self._failed = None
        log.info("serving index version %s (was %s)", fresh.version, old.version,
                 extra={"ragrig": {"event": "serve.switch", "version": fresh.version, "previous": old.version}})
        for listen in self._listeners:
            listen(old, fresh)
        if idle:
            self._release(old)
        return True

    def _release(self, slot: Slot) -> None:
        self.released.append(slot.version)
        slot.retriever = None  # type: ignore[assignment]  # the last reference to the old version's data
        refreeze()  # frozen, what it held in cycles would never be collected; the new version is frozen instead

    # ---- polling --------------------------------------------------------------------------------------------
    def watch(self, every_s: float) -> None:
        """Poll CURRENT every ``every_s`` seconds in a daemon thread until ``stop``."""
        if self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(every_s):
                try:
                    self.check()
                except Exception:  # never let the watcher die: the next poll tries again
                    log.exception("index watcher: unexpected error")

        self._thread = threading.Thread(target=loop, name="ragrig-index-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
