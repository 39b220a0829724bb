"""Section-level IR metrics per query: precision, recall, hit rate, MRR, MAP and nDCG at each k.

A ranked chunk is relevant when it touches (overlaps) an expected section. Each expected
section earns its grade once, at the first chunk that touches it; later chunks touching
the same section count for precision but earn no more gain, and the ideal DCG sorts the
expected grades, so nDCG never exceeds 1 when a big section is split into many chunks.
With one chunk per document and whole-document expectations this is exactly trec_eval's
P_k, recall_k, recip_rank, map_cut_k and ndcg_cut_k (linear gain); a test checks that.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for annotations: the CLI reads the metric lists below without loading test-set code
    from ragrig.eval.relevance import Target

METRICS = ("precision", "recall", "hit_rate", "mrr", "map", "ndcg")

HEADLINE = ("ndcg@10", "recall@10", "mrr@10", "precision@5", "hit_rate@5", "recall@100")
"""The metrics a report leads with, in display order (the eval table's columns, the variance across repeats).
Every shorter list below is a named selection from it, so the order is the same wherever they appear."""
GATED = HEADLINE[:3]
"""What the gate checks when its policy names no metrics: ranking quality at 10."""
COMPARED = HEADLINE[:4]
"""``ragrig compare``'s default metrics, and the per-query columns of an MLflow run (per_query.csv)."""
PER_TAG = (*GATED, "hit_rate@5")
"""Logged to MLflow per tag (``tag.<tag>.ndcg_at_10``)."""
SWEEP_SUMMARY = (*GATED, "recall@100")
"""The columns of a sweep's summary table (Markdown artifact and terminal)."""
PLOTTED = HEADLINE[:2]
"""Drawn in the sweep's per-parameter plots."""


@lru_cache(maxsize=64)
def _keys(k: int) -> tuple[str, ...]:
    """``precision@k`` … ``ndcg@k``, in METRICS order (built once per k: an evaluation asks for them per query)."""
    return tuple(f"{m}@{k}" for m in METRICS)


@dataclass(frozen=True)
class Ranked:
    doc_id: str
    start: int
    end: int


def touched(item: Ranked, targets: Sequence[Target]) -> list[int]:
    return [j for j, t in enumerate(targets) if t.touches(item.doc_id, item.start, item.end)]


def query_metrics(ranking: Sequence[Ranked], targets: Sequence[Target], ks: Sequence[int]) -> dict[str, float]:
    """All metrics at every k for one query, keyed like ``ndcg@10``. ``ranking`` items need ``doc_id``,
    ``start`` and ``end`` (a ``Ranked`` or a retrieval ``Hit``)."""
    if not targets:
        raise ValueError("a query needs at least one expected section")
    n_rel = len(targets)
    ideal = sorted((t.grade for t in targets), reverse=True)
    out: dict[str, float] = {}
    kmax = max(ks)
    by_doc: dict[str, list[int]] = {}
    for j, t in enumerate(targets):
        by_doc.setdefault(t.doc_id, []).append(j)
    # the relevant ranks only (usually a handful of 100): rank index, sections first touched there, their gain
    rel: list[tuple[int, int, float]] = []
    seen: set[int] = set()
    for i, item in enumerate(ranking[:kmax]):
        js = by_doc.get(item.doc_id)
        if not js:
            continue
        hit = [j for j in js if targets[j].touches(item.doc_id, item.start, item.end)]
        if not hit:
            continue
        fresh = [j for j in hit if j not in seen]
        seen.update(fresh)
        rel.append((i, len(fresh), float(sum(targets[j].grade for j in fresh))))
    # running sums over the relevant ranks, in rank order (what a sum over every rank adds up to exactly)
    cum: list[tuple[int, int, float, float]] = []  # (rank index, sections covered, dcg, ap) up to that rank
    covered, dcg, ap = 0, 0.0, 0.0
    for n_hits, (i, fresh, gain) in enumerate(rel, 1):
        covered += fresh
        if gain:
            dcg += gain / math.log2(i + 2)
        if fresh:
            ap += fresh * n_hits / (i + 1)
        cum.append((i, covered, dcg, ap))
    idcg_upto = [0.0]
    for i, g in enumerate(ideal):
        idcg_upto.append(idcg_upto[-1] + g / math.log2(i + 2))
    first_rel = rel[0][0] if rel else None
    for k in ks:
        n_hits = bisect_left(cum, (k,))  # relevant ranks with index < k
        _, covered, dcg, ap = cum[n_hits - 1] if n_hits else (0, 0, 0.0, 0.0)
        idcg = idcg_upto[min(k, len(ideal))]
        kp, kr, kh, km, ka, kn = _keys(k)
        out[kp] = n_hits / k
        out[kr] = covered / n_rel
        out[kh] = 1.0 if n_hits else 0.0
        out[km] = 0.0 if first_rel is None or first_rel >= k else 1.0 / (first_rel + 1)
        out[ka] = ap / n_rel
        # a chunk spanning several expected sections earns all their grades at one rank, which the ideal
        # (one section per rank) cannot: cap at 1, the score of a ranking that covers everything at once
        out[kn] = min(1.0, dcg / idcg) if idcg > 0 else 0.0
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = rows[0].keys()
    return {k: sum([r[k] for r in rows]) / len(rows) for k in keys}
