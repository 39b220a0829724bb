"""An ingest's stage boundaries: each stage timed into the run's stats and logged as an ``ingest.stage`` event,
the index build's parts timed from one to the next, and a hook called at every point (the crash tests kill the
process there and check that no broken version is ever published)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ragrig.retrieval.ingest.stats import IngestStats

log = logging.getLogger("ragrig.retrieval.ingest.pipeline")  # the stage events' logger, as before this module


class StageClock:
    def __init__(self, stats: IngestStats, hook: Callable[[str], None] | None = None) -> None:
        self.stats = stats
        self.hook = hook
        self._part_t0 = 0.0  # when the index build's last part ended

    def mark(self, point: str) -> None:
        """A point of the run: the index build's parts ("index:tables", "index:bm25" with the keyword library,
        "index:reader" (``reader/``), "index:vectors" (``vectors.npy`` and the graph, unless the ingest's "vectors"
        stage wrote them first),
        "index:chroma") are timed from one to the next; then the hook."""
        if point == "before:index" or point.startswith("index:"):
            now = time.perf_counter()
            if point.startswith("index:"):
                self.stats.add_seconds(point, now - self._part_t0)
            self._part_t0 = now
        if self.hook:
            self.hook(point)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """``before:<stage>``, the stage, its seconds into the stats and its log event, ``after:<stage>``."""
        self.mark(f"before:{stage}")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stats.add_seconds(stage, time.perf_counter() - t0)
        log.info("ingest stage %s: %.3f s", stage, self.stats.seconds[stage],
                 extra={"ragrig": self.stats.stage_event(stage)})
        self.mark(f"after:{stage}")
