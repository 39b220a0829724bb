"""What a batch of searches computes once and may reuse: processed queries, query vectors, each source's
candidates, candidate sets and batches, keyed by everything they depend on.

A plain ``search_many`` uses a fresh memo for its one batch. A sweep passes one ``CandidateMemo`` per index
version to every fusion/shaping variant it evaluates, so candidates are fetched once and only fusion,
selection and shaping run per variant. Keys hold values (texts, depths, ``Filters``), never object ids.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, SourceRun
from ragrig.retrieval.search.query import ProcessedQuery

T = TypeVar("T")


@dataclass
class CandidateMemo:
    processed: dict[tuple[Hashable, str], ProcessedQuery] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    runs: dict[Hashable, SourceRun] = field(default_factory=dict)
    sets: dict[Hashable, CandidateSet] = field(default_factory=dict)
    batches: dict[Hashable, CandidateBatch] = field(default_factory=dict)

    @staticmethod
    def get(table: dict[Hashable, T], key: Hashable, make: Callable[[], T]) -> T:
        got = table.get(key)
        if got is None:
            got = table[key] = make()
        return got
