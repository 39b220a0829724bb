"""What a batch of searches computes once and may reuse: processed queries, query vectors, each source's
candidates, candidate sets and batches, keyed by everything they depend on.

A plain ``search_many`` uses a fresh memo for its one batch. A sweep passes one ``CandidateMemo`` per index
version to every fusion/shaping variant it evaluates, so candidates are fetched once and only fusion,
selection and shaping run per variant. Keys hold values (texts, depths, ``Filters``), never object ids. Query
vectors are kept per (model, text), ``None`` being the index's own model: ``query_vectors`` is the one place a
query is encoded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, SourceRun
from ragrig.retrieval.search.query import ProcessedQuery, QueryProcessor

T = TypeVar("T")


@dataclass
class CandidateMemo:
    processed: dict[tuple[Hashable, str], ProcessedQuery] = field(default_factory=dict)
    vectors: dict[tuple[str | None, str], np.ndarray] = field(default_factory=dict)
    runs: dict[Hashable, SourceRun] = field(default_factory=dict)
    sets: dict[Hashable, CandidateSet] = field(default_factory=dict)
    batches: dict[Hashable, CandidateBatch] = field(default_factory=dict)
    embed_ms: float = 0.0  # time spent encoding queries, all calls together

    def query_vectors(self, model: str | None, texts: Sequence[str],
                      encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """The texts' query vectors under ``model``; those not seen before encoded in one ``encode`` call."""
        fresh = [t for t in dict.fromkeys(texts) if (model, t) not in self.vectors]
        if fresh:
            t0 = time.perf_counter()
            self.vectors.update(zip(((model, t) for t in fresh), encode(fresh)))
            self.embed_ms += (time.perf_counter() - t0) * 1000
        return np.vstack([self.vectors[(model, t)] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    def process(self, proc: QueryProcessor, key: Hashable, texts: Sequence[str],
                t: list[dict[str, float]]) -> list[ProcessedQuery]:
        """Each text processed by ``proc`` (settings ``key``), once per (key, text); its ms in ``t[i]["process"]``."""
        out = []
        for i, text in enumerate(texts):
            t0 = time.perf_counter()
            out.append(self.get(self.processed, (key, text), lambda text=text: proc.process(text)))
            t[i]["process"] = (time.perf_counter() - t0) * 1000
        return out

    @staticmethod
    def get(table: dict[Hashable, T], key: Hashable, make: Callable[[], T]) -> T:
        got = table.get(key)
        if got is None:
            got = table[key] = make()
        return got
