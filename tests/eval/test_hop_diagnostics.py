"""Hop diagnostics on a hand-built multi-hop result: what each hop decided and which expected sections it added,
per-hop recall gains over cases and tags, and the cases whose hops changed between two runs."""

from __future__ import annotations

import pytest
from ragrig.eval.hop_diagnostics import GAIN, hop_changes, hop_gains, hop_rows, hop_summary
from ragrig.eval.relevance import Target
from ragrig.retrieval.results import Hit, RetrievalResult

TARGETS = [Target("a.md#a", "a.md", 0, 100, 2, ""), Target("b.md#b", "b.md", 0, 100, 2, ""),
           Target("c.md#c", "c.md", 0, 50, 1, "")]


def hit(doc: str, start: int, end: int, hop: int) -> Hit:
    return Hit(chunk_id=f"{doc}#{start}", doc_id=doc, header_path=[doc], text="", score=1.0, hop=hop, start=start,
               end=end)


RESULT = RetrievalResult(
    query="q", normalized="q", bm25_query="q", expansions=[], comparison=None, version="v000001",
    hits=[hit("a.md", 0, 100, 0), hit("x.md", 0, 10, 0), hit("b.md", 0, 100, 1), hit("a.md", 50, 100, 1)],
    hops=[{"hop": 1, "can_answer": False, "reasoning": "named but not in the context: B",
           "missing": [{"item": "B", "origin": None}], "added": [{"chunk_id": "b.md#0", "item": "B", "via": "header"}]},
          {"hop": 2, "can_answer": True, "reasoning": "every rule is in the context", "missing": [], "added": []}])


def test_hop_rows_by_hand():
    rows = hop_rows(RESULT, TARGETS)
    # a.md#a: first touched by a hop-0 hit (the hop-1 hit on a.md comes later); b.md#b by hop 1; c.md#c never
    assert rows == [
        {"hop": 1, "can_answer": False, "reasoning": "named but not in the context: B", "asked": ["B"],
         "added": ["b.md#0"], "found": ["b.md#b"], GAIN: pytest.approx(1 / 3)},
        {"hop": 2, "can_answer": True, "reasoning": "every rule is in the context", "asked": [], "added": [],
         "found": [], GAIN: 0.0},
    ]
    # outside the top k a hop finds nothing
    assert hop_rows(RESULT, TARGETS, k=2)[0]["found"] == []
    assert hop_summary(rows) == "1: asked B -> found b.md#b (+0.33); 2: can answer"


def test_hop_gains_over_cases_and_tags():
    one = {"id": "m", "tags": ["multi-hop"], "hops": hop_rows(RESULT, TARGETS)}
    two = {"id": "s", "tags": ["single-hop"], "hops": []}
    gains = hop_gains([one, two])
    assert gains["overall"] == {"1": pytest.approx(1 / 6), "2": 0.0}
    assert gains["multi-hop"] == {"1": pytest.approx(1 / 3), "2": 0.0}
    assert gains["single-hop"] == {"1": 0.0, "2": 0.0}
    assert hop_gains([two]) == {}


def test_hop_changes_between_runs():
    before = {"m": {"hops": hop_rows(RESULT, TARGETS)}, "s": {"hops": []}, "old": {}}
    worse = RetrievalResult(**{**RESULT.__dict__, "hits": RESULT.hits[:2]})  # hop 1 fetched nothing useful
    after = {"m": {"hops": hop_rows(worse, TARGETS)}, "s": {"hops": []}, "old": {}}
    [change] = hop_changes(before, after, ["m", "s", "old"])  # "old": logged without diagnostics, skipped
    assert change == {"id": "m", "before": "1: asked B -> found b.md#b (+0.33); 2: can answer",
                      "after": "1: asked B -> found nothing expected (+0.00); 2: can answer",
                      "gain_before": pytest.approx(1 / 3), "gain_after": 0.0}
