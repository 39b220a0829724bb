"""What a sweep returns: one row per (config, test set), the indexes it built, its timings and the best row."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class SweepRow:
    label: str
    overrides: dict[str, Any]
    index_key: str
    testset: str
    metrics: dict[str, float]
    seconds: float
    run_id: str | None = None


@dataclass
class IndexStats:
    index_key: str
    chunks: int
    embedded: int
    cached: int
    distinct_texts: int
    seconds: float


@dataclass
class SweepResult:
    name: str
    metric: str
    rows: list[SweepRow] = field(default_factory=list)
    indexes: list[IndexStats] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    parent_run_id: str | None = None
    trained: dict[str, dict[str, str]] = field(default_factory=dict)  # label -> the settings training set (folders)

    @property
    def best(self) -> SweepRow | None:
        """The row with the highest ``metric`` (the first such row on a tie)."""
        return max(self.rows, key=lambda r: (r.metrics.get(self.metric, float("-inf")), -self.rows.index(r)),
                   default=None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        b = self.best
        d["best"] = asdict(b) if b else None
        return d


def swept_params(result: SweepResult) -> list[str]:
    keys: list[str] = []
    for r in result.rows:
        for k in r.overrides:
            if k not in keys:
                keys.append(k)
    return keys
