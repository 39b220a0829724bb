"""ragas context metrics (no LLM) on hand-built retrievals: hand-computed values, and the memoised string
similarity scores exactly like stock ragas."""

from __future__ import annotations

import asyncio

import pytest
from ragrig.eval.ragas_metrics import ragas_scores
from ragrig.eval.relevance import Target
from ragrig.retrieval.results import Hit, RetrievalResult


def hit(doc: str, text: str, start: int = 0, end: int = 10) -> Hit:
    return Hit(chunk_id=f"{doc}#{start}", doc_id=doc, header_path=[], text=text, score=1.0, start=start, end=end)


def result(query: str, hits: list[Hit]) -> RetrievalResult:
    return RetrievalResult(query=query, normalized=query, bm25_query=query, expansions=[], comparison=None,
                           hits=hits, version="v000001")


T1 = Target("a#One", "a", 0, 100, 1, "alpha beta gamma")
T2 = Target("b#Two", "b", 0, 50, 1, "delta epsilon")
T3 = Target("e#Three", "e", 0, 50, 1, "omega")
CASES = [
    # exact text of T1 (similarity 1); unrelated (0 with both); T2 plus one character (1 - 1/14)
    (result("q1", [hit("a", "alpha beta gamma"), hit("c", "zzzzzzzzzzzz"), hit("b", "delta epsilon!")]), [T1, T2]),
    # no section of T3's document, but a near-identical text (1 - 1/6)
    (result("q2", [hit("d", "omegas")]), [T3]),
]


def test_hand_computed_context_metrics():
    got = ragas_scores(CASES, k=3)
    assert got == pytest.approx({
        # ids: q1 retrieved {a#One, c#0, b#Two} of which 2 expected; q2 {d#0}, none
        "id_context_precision@3": (2 / 3 + 0) / 2,
        "id_context_recall@3": (1 + 0) / 2,
        # verdicts (similarity >= 0.5) q1 [1, 0, 1]: average precision (1/1 + 2/3) / 2; q2 [1]: 1
        "nonllm_context_precision@3": ((1 + 2 / 3) / 2 + 1) / 2,
        # each expected text has a retrieved one above 0.5
        "nonllm_context_recall@3": 1.0,
    })


def test_depth_cuts_the_retrieved_contexts():
    got = ragas_scores(CASES, k=1)  # q1 keeps only the exact T1 text
    assert got["id_context_recall@1"] == pytest.approx((1 / 2 + 0) / 2)
    assert got["nonllm_context_recall@1"] == pytest.approx((1 / 2 + 1) / 2)
    assert got["nonllm_context_precision@1"] == pytest.approx(1.0)


def test_memoised_similarity_equals_stock_ragas():
    from ragas import SingleTurnSample
    from ragas.metrics import NonLLMContextPrecisionWithReference, NonLLMContextRecall

    texts = ["Each creature can take one reaction per round.", "A reaction is an instant response to a trigger",
             "Opportunity attacks use your reaction.", "Cover: half cover grants +2 to AC", "zzz"]
    refs = [["A reaction is an instant response to a trigger of some kind."], ["Half cover gives +2 AC.", "zzzz"]]
    cases = [(result(f"q{i}", [hit(f"d{j}", t, j, j + 1) for j, t in enumerate(texts[i:] + texts[:i])]),
              [Target(f"r{i}#{n}", "x", 0, 1, 1, r) for n, r in enumerate(rs)]) for i, rs in enumerate(refs)]
    stock_p, stock_r = NonLLMContextPrecisionWithReference(), NonLLMContextRecall()

    async def stock(metric):  # noqa: ANN001, ANN202
        out = []
        for res, targets in cases:
            s = SingleTurnSample(user_input=res.query, retrieved_contexts=[h.text for h in res.hits],
                                 reference_contexts=[t.text for t in targets])
            out.append(await metric.single_turn_ascore(s))
        return sum(out) / len(out)

    got = ragas_scores(cases, k=5)
    assert got["nonllm_context_precision@5"] == pytest.approx(asyncio.run(stock(stock_p)), abs=1e-12)
    assert got["nonllm_context_recall@5"] == pytest.approx(asyncio.run(stock(stock_r)), abs=1e-12)
    assert 0 < got["nonllm_context_precision@5"] < 1  # the cases discriminate


def test_cutoff_similarity_gives_stock_verdicts_near_the_threshold():
    """Retrieved texts made from the reference by random edits, so similarities fall on both sides of 0.5
    (and on it): every case scores exactly as stock ragas."""
    import random

    from ragas import SingleTurnSample
    from ragas.metrics import NonLLMContextPrecisionWithReference, NonLLMContextRecall
    from rapidfuzz.distance import Levenshtein

    rng = random.Random(3)

    def edit(text: str, n: int) -> str:
        chars = list(text)
        for _ in range(n):
            i = rng.randrange(len(chars))
            chars[i] = rng.choice("xyz")
        return "".join(chars)

    stock_p, stock_r = NonLLMContextPrecisionWithReference(), NonLLMContextRecall()
    sims = []
    for case in range(60):
        ref = "".join(rng.choice("abcdefgh") for _ in range(rng.choice([10, 20, 40])))
        retrieved = [edit(ref, rng.randint(0, len(ref))) for _ in range(4)]
        sims += [1 - Levenshtein.normalized_distance(t, ref) for t in retrieved]
        res = result(f"q{case}", [hit(f"d{j}", t, j, j + 1) for j, t in enumerate(retrieved)])
        got = ragas_scores([(res, [Target("r#1", "r", 0, 1, 1, ref)])], k=4)
        s = SingleTurnSample(user_input="q", retrieved_contexts=retrieved, reference_contexts=[ref])
        assert got["nonllm_context_precision@4"] == asyncio.run(stock_p.single_turn_ascore(s)), case
        assert got["nonllm_context_recall@4"] == asyncio.run(stock_r.single_turn_ascore(s)), case
    assert min(sims) < 0.4 and max(sims) == 1.0 and any(s == 0.5 for s in sims)  # both sides, and exactly on it


def test_ragas_imports_warn_nobody():
    """ragas 0.4 attributes its 'moves to ragas.metrics.collections' DeprecationWarning to our importing line, so
    every gate printed five of them; a fresh import under warnings-as-errors must be silent."""
    import importlib
    import sys
    import warnings

    for name in [m for m in sys.modules if m == "ragas" or m.startswith("ragas.")]:
        del sys.modules[name]  # imported anew, so the import-time warnings fire again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(sys.modules["ragrig.eval.ragas_metrics"])
        assert ragas_scores(CASES, k=10)


@pytest.mark.parametrize("tracking_off", [True, False])
def test_scores_write_no_ragas_user_id_into_the_home_when_tracking_is_off(tmp_path, monkeypatch, tracking_off):
    """ragas 0.4 builds an analytics event for every score, and the event's user id is read from, or first
    written to, ``<data dir>/ragas/uuid.json``: with tracking off (ragrig's default) nothing is written there;
    a user who turned tracking on gets ragas as it is."""
    from ragas import _analytics

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true" if tracking_off else "false")
    _analytics.get_userid.cache_clear()  # as in a new process
    try:
        assert ragas_scores(CASES, k=3)
        written = (tmp_path / "data" / "ragas" / "uuid.json").is_file()
        assert written is not tracking_off
        assert not (tmp_path / "home" / ".local").exists()
        if tracking_off:
            assert _analytics.get_userid().startswith("anonymous-")
    finally:
        _analytics.get_userid.cache_clear()
