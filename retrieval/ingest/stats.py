"""What one ingest run did: documents and chunks per outcome, failures, warnings, seconds per stage
(the run summary ``ragrig ingest`` prints and writes as JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ragrig.retrieval.documents import Document, FailedDoc


@dataclass
class IngestStats:
    index_key: str = ""
    index_dir: str = ""
    version: str | None = None
    previous_version: str | None = None
    published: bool = False
    docs_seen: int = 0
    docs_new: int = 0
    docs_changed: int = 0
    docs_unchanged: int = 0
    docs_removed: int = 0
    docs_failed: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_cached: int = 0
    chunks_over_window: int = 0
    views_embedded: dict[str, int] = field(default_factory=dict)  # vectors each fused view newly embedded
    repaired: str | None = None  # a damaged published version (or "CURRENT") this run rebuilt instead of keeping
    kept_in_use: list[str] = field(default_factory=list)  # old versions prune left because a reader holds them
    failures: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fail(self, doc_id: str, stage: str, reason: str) -> None:
        self.failures.append({"doc_id": doc_id, "stage": stage, "reason": reason})
        self.docs_failed = len(self.failures)

    def failed_ids(self, *, after_discover: bool = False) -> set[str]:
        """Documents that failed; ``after_discover``: only those that were read but not extracted or chunked."""
        return {f["doc_id"] for f in self.failures if not after_discover or f["stage"] != "discover"}

    def record_extracted(self, docs: list[Document], failed: list[FailedDoc]) -> None:
        for f in failed:
            self.fail(f.doc_id, f.stage, f.reason)
        for d in docs:
            for w in d.warnings:
                self.warnings.append(f"{d.doc_id}: {w}")

    def add_seconds(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + seconds, 3)

    def stage_event(self, stage: str) -> dict[str, Any]:
        """The structured log fields of a finished stage (``--log-json``)."""
        return {"event": "ingest.stage", "index": self.index_key, "stage": stage, "seconds": self.seconds[stage],
                "docs_seen": self.docs_seen, "docs_new": self.docs_new, "docs_changed": self.docs_changed,
                "docs_removed": self.docs_removed, "docs_failed": self.docs_failed, "chunks": self.chunks,
                "chunks_embedded": self.chunks_embedded, "chunks_cached": self.chunks_cached}
