"""Build candidate batches from ``{source: {chunk id: score}}`` runs, for hand-computed fusion/selection tests.

Rows are given in order of first appearance, NOT in id order, so a test that passes only because rows happen to
be sorted by id would fail: ties must break by chunk id.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from ragrig.configs.models import FusionConfig
from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, ChunkOrder, DedupKeys, SourceRun
from ragrig.retrieval.search.fusion import fuse

Runs = Mapping[str, Mapping[str, float]]


def batch_of(queries: list[Runs], keys: Mapping[str, tuple[Hashable, ...]] | None = None
             ) -> tuple[CandidateBatch, list[str]]:
    ids = list(dict.fromkeys([*(i for q in queries for run in q.values() for i in run), *(keys or {})]))
    row = {i: n for n, i in enumerate(ids)}
    dedup = DedupKeys.build([tuple((keys or {}).get(i, (("own", i),))) for i in ids])
    order = ChunkOrder.of(ids)
    sets = [CandidateSet.build({s: SourceRun.of([(row[i], sc) for i, sc in run.items()]) for s, run in q.items()},
                               order, dedup) for q in queries]
    return CandidateBatch.of(sets), ids


def fusion(method: str = "rrf", **kw: object) -> FusionConfig:
    return FusionConfig(method=method, **({"weights": {"bm25": 1.0, "vector": 1.0, "header": 1.0}} | kw))


def fused(runs: Runs, method: str = "rrf", **kw: object) -> list[tuple[str, float]]:
    """One query's fused (id, 0..1 score) list."""
    batch, ids = batch_of([runs])
    f = fuse(batch, fusion(method, **kw))
    return [(ids[int(batch.rows[e])], float(s)) for e, s in zip(f.order, f.scores)]
