"""ragas context metrics on the same retrievals, without an LLM: ID-based and non-LLM context
precision/recall. LLM-based ragas metrics need a configured LLM and are never required here.

A retrieved chunk's "id" is the key of the first expected section it touches (else its chunk id),
so ID-based precision/recall speak about sections, like our own metrics.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ragrig.eval.relevance import Target
from ragrig.retrieval.results import RetrievalResult

log = logging.getLogger(__name__)

MAX_CONTEXT_CHARS = 2000  # non-LLM string similarity is quadratic in length: compare the opening of each


def _memo_similarity(threshold: float):  # type: ignore[no-untyped-def]
    """ragas' NonLLMStringSimilarity (1 - normalised Levenshtein distance, rapidfuzz), computed once per
    (retrieved, reference) pair, and only as far as the metrics' ``threshold`` needs.

    Non-LLM context precision and recall only ask whether a similarity reaches the threshold (0.5), so
    the distance is computed with rapidfuzz's ``score_cutoff``: a pair below the threshold reports 0, a
    pair at or above it its exact value, and every verdict, hence every score, is the stock one (a test
    compares them). On SciFact that is 4x cheaper per pair; and precision and recall compare the same
    pairs, each call otherwise also paying ragas' callback set-up."""
    from dataclasses import dataclass, field

    with _ragas_imports():
        from ragas.metrics import NonLLMStringSimilarity

    cutoff = 1.0 - threshold

    @dataclass
    class MemoSimilarity(NonLLMStringSimilarity):
        memo: dict[tuple[str, str], float] = field(default_factory=dict)

        async def single_turn_ascore(self, sample, callbacks=None, timeout=None):  # type: ignore[no-untyped-def]
            key = (sample.reference, sample.response)
            score = self.memo.get(key)
            if score is None:
                measure = self.distance_measure_map[self.distance_measure]
                score = self.memo[key] = 1.0 - measure.normalized_distance(*key, score_cutoff=cutoff)
            return score

    return MemoSimilarity()



def _no_ragas_user_id() -> None:
    """With tracking off (``RAGAS_DO_NOT_TRACK``, which ragrig sets unless the user chose), keep ragas from writing
    a user id into the user's home. ragas 0.4 builds an analytics event for every metric score whether or not
    it sends it, and the event's default user id is read from, or first written to,
    ``~/.local/share/ragas/uuid.json`` (``ragas._analytics.get_userid``, memoised for the process): a plain
    ``ragrig eval`` left that file. Its first call here is pointed at a folder that cannot be made, so ragas takes
    its own fallback, an anonymous id that lives only in this process's memo."""
    if os.environ.get("RAGAS_DO_NOT_TRACK", "").lower() != "true":
        return
    from ragas import _analytics

    if _analytics.get_userid.cache_info().currsize:
        return
    real = _analytics.user_data_dir
    _analytics.user_data_dir = lambda *a, **k: os.path.join(os.devnull, "ragas")  # not a folder: ragas' fallback
    try:
        _analytics.get_userid()
    finally:
        _analytics.user_data_dir = real


@contextmanager
def _ragas_imports() -> Iterator[None]:
    """ragas 0.4 warns that these metrics move to ``ragas.metrics.collections`` in 1.0, attributing the warning to
    the importing line (ours), so a user saw five DeprecationWarnings on every gate. Pinned ragas==0.4.3 keeps
    them here; the move is for the upgrade to 1.0."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*ragas.metrics")
        yield


def ragas_scores(
    cases: Sequence[tuple[RetrievalResult, list[Target]]], k: int
) -> dict[str, float]:
    """Mean ragas scores over cases at depth ``k``; {} (with a warning) when ragas is unavailable."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    try:
        with _ragas_imports():
            from ragas import SingleTurnSample
            from ragas.metrics import (
                IDBasedContextPrecision,
                IDBasedContextRecall,
                NonLLMContextPrecisionWithReference,
                NonLLMContextRecall,
            )
    except Exception as exc:  # pragma: no cover - ragas is a dependency, but keep eval usable without it
        log.warning("ragas metrics skipped: %s", exc)
        return {}
    _no_ragas_user_id()
    recall = NonLLMContextRecall()
    precision = NonLLMContextPrecisionWithReference()
    similarity = _memo_similarity(min(recall.threshold, precision.threshold))
    precision.distance_measure = similarity
    recall._distance_measure = similarity  # its public setter would wrap a fresh, unmemoised one
    metrics = {
        "id_context_precision": IDBasedContextPrecision(),
        "id_context_recall": IDBasedContextRecall(),
        "nonllm_context_precision": precision,
        "nonllm_context_recall": recall,
    }
    totals = {name: 0.0 for name in metrics}

    async def score_all() -> None:
        for res, targets in cases:
            hits = res.hits[:k]
            ids = []
            for h in hits:
                key = next((t.key for t in targets if t.touches(h.doc_id, h.start, h.end)), h.chunk_id)
                ids.append(key)
            sample = SingleTurnSample(
                user_input=res.query,
                retrieved_context_ids=ids or ["<none>"],
                reference_context_ids=[t.key for t in targets],
                retrieved_contexts=[h.text[:MAX_CONTEXT_CHARS] for h in hits] or [""],
                reference_contexts=[t.text[:MAX_CONTEXT_CHARS] for t in targets],
            )
            for name, m in metrics.items():
                v = await m.single_turn_ascore(sample)
                totals[name] += float(v) if v == v else 0.0  # NaN -> 0

    asyncio.run(score_all())
    n = max(1, len(cases))
    return {f"{name}@{k}": v / n for name, v in totals.items()}
