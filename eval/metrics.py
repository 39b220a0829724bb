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
from collections.abc import Sequence
from dataclasses import dataclass

from eval.relevance import Target

METRICS = ("precision", "recall", "hit_rate", "mrr", "map", "ndcg")


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
    rel_flags: list[bool] = []
    new_gain: list[float] = []
    new_count: list[int] = []
    seen: set[int] = set()
    by_doc: dict[str, list[int]] = {}
    for j, t in enumerate(targets):
        by_doc.setdefault(t.doc_id, []).append(j)
    for item in ranking[:kmax]:
        js = by_doc.get(item.doc_id)
        hit = [j for j in js if targets[j].touches(item.doc_id, item.start, item.end)] if js else []
        rel_flags.append(bool(hit))
        fresh = [j for j in hit if j not in seen]
        seen.update(fresh)
        new_gain.append(float(sum(targets[j].grade for j in fresh)))
        new_count.append(len(fresh))
    # one pass of prefix sums; every k reads them (each k used to re-slice and re-sum the ranking)
    n = len(rel_flags)
    hits_upto = [0] * (n + 1)  # relevant chunks in ranks 1..i
    covered_upto = [0] * (n + 1)  # expected sections first touched in ranks 1..i
    dcg_upto = [0.0] * (n + 1)
    ap_upto = [0.0] * (n + 1)
    first_rel = None
    for i in range(n):
        f = rel_flags[i]
        if f and first_rel is None:
            first_rel = i
        hits_upto[i + 1] = hits_upto[i] + f
        covered_upto[i + 1] = covered_upto[i] + new_count[i]
        dcg_upto[i + 1] = dcg_upto[i] + (new_gain[i] / math.log2(i + 2) if new_gain[i] else 0.0)
        ap_upto[i + 1] = ap_upto[i] + (new_count[i] * hits_upto[i + 1] / (i + 1) if new_count[i] else 0.0)
    idcg_upto = [0.0]
    for i, g in enumerate(ideal):
        idcg_upto.append(idcg_upto[-1] + g / math.log2(i + 2))
    for k in ks:
        m = min(k, n)
        n_hits = hits_upto[m]
        out[f"precision@{k}"] = n_hits / k
        out[f"recall@{k}"] = covered_upto[m] / n_rel
        out[f"hit_rate@{k}"] = 1.0 if n_hits else 0.0
        out[f"mrr@{k}"] = 0.0 if first_rel is None or first_rel >= k else 1.0 / (first_rel + 1)
        out[f"map@{k}"] = ap_upto[m] / n_rel
        idcg = idcg_upto[min(k, len(ideal))]
        # a chunk spanning several expected sections earns all their grades at one rank, which the ideal
        # (one section per rank) cannot: cap at 1, the score of a ranking that covers everything at once
        out[f"ndcg@{k}"] = min(1.0, dcg_upto[m] / idcg) if idcg > 0 else 0.0
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = rows[0].keys()
    return {k: sum(r[k] for r in rows) / len(rows) for k in keys}
