"""The fused rerank stage (off by default): a cross-encoder rescores each query's first ``top_n`` selected
candidates and its score is combined with the hybrid one, never replacing it:

    combined = (1 - weight) * norm(hybrid) + weight * norm(cross)

``norm`` is ``zscore`` or ``minmax`` over the query's top_n (``fusion.py``'s normalisers). The top_n are put in
combined order (a tie keeps the hybrid order); everything after them keeps its place. Their displayed scores
are the combined ones mapped onto the range the hybrid scores of those top_n spanned, so a ranking's scores
still fall from first to last. Then each query is cut at its own limit again (select widened it to top_n).

Cross-encoder scores are kept per (model, token cap, query, chunk row) on the ``Reranker``: a sweep or tune that
varies the weight, top_n or normalisation over one index, and a server asked the same question again, score each
pair once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from ragrig.configs.models import RerankConfig
from ragrig.retrieval.encoders.cross_encoder import PairScorer
from ragrig.retrieval.search.fusion import NORMALIZERS, minmax
from ragrig.retrieval.search.select import Selection


def combine(hybrid: np.ndarray, cross: np.ndarray, weight: float, normalization: str) -> np.ndarray:
    norm = NORMALIZERS[normalization]
    return (1.0 - weight) * norm(np.asarray(hybrid, float)) + weight * norm(np.asarray(cross, float))


def reorder(hybrid: np.ndarray, cross: np.ndarray, weight: float, normalization: str) -> tuple[np.ndarray, np.ndarray]:
    """The permutation of a top_n block (given in hybrid order) by combined score, ties in hybrid order, and the
    block's new scores: the combined ones mapped onto the hybrid scores' range, in the new order."""
    if len(hybrid) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    c = combine(hybrid, cross, weight, normalization)
    perm = np.lexsort((np.arange(len(c)), -c))
    lo, hi = float(np.min(hybrid)), float(np.max(hybrid))
    return perm, lo + (hi - lo) * minmax(c)[perm]


def widen(limits: Sequence[int | None], cfg: RerankConfig) -> list[int | None]:
    """Selection limits that keep at least top_n per query for the rerank to look at (None: no cut)."""
    return [None if lim is None else max(lim, cfg.top_n) if cfg.enabled else lim for lim in limits]


class Reranker:
    MAX_PAIRS = 200_000  # a long-running server's pair scores are dropped (all at once) past this many

    def __init__(self, scorer: PairScorer) -> None:
        self.scorer = scorer
        self.cache: dict[tuple[int, str, int], float] = {}

    def scores(self, queries: Sequence[str], rows: Sequence[Sequence[int]], text: Callable[[int], str],
               max_tokens: int | None = None) -> list[np.ndarray]:
        """Each query's cross-encoder scores for its rows, each pair cut to ``max_tokens``; pairs not seen before
        are scored in one call."""
        cap = -1 if max_tokens is None else max_tokens
        todo = list(dict.fromkeys((cap, q, r) for q, rs in zip(queries, rows) for r in rs
                                  if (cap, q, r) not in self.cache))
        if todo:
            if len(self.cache) + len(todo) > self.MAX_PAIRS:
                self.cache.clear()
            got = self.scorer.score([(q, text(r)) for _, q, r in todo], max_tokens)
            self.cache.update(zip(todo, got.tolist()))
        return [np.array([self.cache[(cap, q, r)] for r in rs], dtype=np.float64) for q, rs in zip(queries, rows)]

    def apply(self, sel: Selection, batch_rows: np.ndarray, queries: Sequence[str], limits: Sequence[int | None],
              cfg: RerankConfig, text: Callable[[int], str]) -> tuple[Selection, list[dict[int, tuple[int, float]]], float]:
        """``sel`` with each query's first top_n reordered and cut at ``limits`` (carrying, per query, each
        rescored row's (cross-encoder rank, score)); those again; and the stage's milliseconds."""
        t0 = time.perf_counter()
        blocks = [sel.of(q) for q in range(len(queries))]
        heads = [batch_rows[elems[: cfg.top_n]].tolist() for elems, _ in blocks]
        cross = self.scores(queries, heads, text, cfg.max_tokens)
        orders, scores, bounds, info = [], [], [0], []
        for q, ((elems, sc), rows, ce) in enumerate(zip(blocks, heads, cross)):
            n = len(rows)
            perm, new = reorder(sc[:n], ce, cfg.weight, cfg.normalization)
            e = np.concatenate([elems[:n][perm], elems[n:]])
            s = np.concatenate([new, sc[n:]])
            if limits[q] is not None:
                e, s = e[: limits[q]], s[: limits[q]]
            orders.append(e)
            scores.append(s)
            bounds.append(bounds[-1] + len(e))
            ce_rank = np.lexsort((np.arange(n), -ce))
            info.append({rows[i]: (rank + 1, float(ce[i])) for rank, i in enumerate(ce_rank.tolist())})
        out = Selection(np.concatenate(orders) if orders else sel.order[:0],
                        np.concatenate(scores) if scores else sel.scores[:0], np.array(bounds), sel.dropped, info)
        return out, info, (time.perf_counter() - t0) * 1000
