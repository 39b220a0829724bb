"""The one result shape: hits with chunk id, doc, header path, text, fused score and per-source ranks."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class SourceScore:
    rank: int  # 1-based rank within that source's candidates
    score: float


@dataclass(slots=True)  # built ~100 per query in evaluations: slots make that measurably cheaper
class Hit:
    chunk_id: str
    doc_id: str
    header_path: list[str]
    text: str
    score: float  # fused score scaled to 0..1 (1 = ranked first by every source)
    sources: dict[str, SourceScore] = field(default_factory=dict)
    hop: int = 0  # 0 = the query itself; n = added by hop n of multi-hop retrieval
    reason: str = ""  # why it is here when not by rank: "comparison: X", "section of …", "hop: X"
    start: int = 0
    end: int = 0
    tokens: int = 0

    @property
    def header(self) -> str:
        return " > ".join(self.header_path)

    def rank_in(self, source: str) -> int | None:
        s = self.sources.get(source)
        return s.rank if s else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RetrievalResult:
    query: str
    normalized: str
    bm25_query: str
    expansions: list[str]
    comparison: list[str] | None
    hits: list[Hit]
    version: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    candidates: dict[str, int] = field(default_factory=dict)  # per-source candidate counts
    hops: list[dict[str, Any]] = field(default_factory=list)  # multi-hop judgements, in order
    cached: bool = False
    # lean batch mode (sweeps): the whole ranking as chunks (doc_id/start/end, what metrics read), while
    # ``hits`` holds only the first few as full Hits; None otherwise
    ranked: list[Any] | None = field(default=None, repr=False)

    def run(self) -> dict[str, float]:
        """``{chunk_id: score}`` with strictly decreasing scores in rank order (the BEIR/ranx run shape)."""
        n = len(self.hits)
        return {h.chunk_id: float(n - i) for i, h in enumerate(self.hits)}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("ranked", None)
        return out
