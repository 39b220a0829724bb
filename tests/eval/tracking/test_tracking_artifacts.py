"""The files of an evaluation's run, on a hand-built report: the per-query columns, failed_cases.md, and the
secret scrubbing every text goes through."""

from __future__ import annotations

from ragrig.eval.tracking.artifacts import PER_QUERY_COLUMNS, failed_cases_markdown, per_query_rows
from ragrig.eval.tracking.secrets import safe_params, scrub


def test_per_query_rows_have_the_compared_metrics_in_order(make_report):
    assert PER_QUERY_COLUMNS == ("id", "query", "tags", "ndcg@10", "recall@10", "mrr@10", "precision@5",
                                 "latency_ms", "missed@10", "hops")
    r = make_report(ndcg=0.5)
    r.per_query[0]["missed@10"] = ["a.md#x", "a.md#y"]
    r.per_query[0]["hops"] = [{"hop": 1, "can_answer": False, "reasoning": "named: Lethal", "asked": ["Lethal x+"],
                               "added": ["a.md#3"], "found": ["a.md#lethal x+"], "recall_gain@10": 0.5},
                              {"hop": 2, "can_answer": True, "reasoning": "done", "asked": [], "added": [],
                               "found": [], "recall_gain@10": 0.0}]
    [row] = per_query_rows(r, ["lethal"])
    assert row == {"id": "q1", "query": "what does *** do", "tags": "rules", "ndcg@10": 0.5, "recall@10": 1.0,
                   "mrr@10": 1.0, "precision@5": 0.2, "latency_ms": 1.5, "missed@10": "a.md#x; a.md#y",
                   "hops": "1: asked Lethal x+ -> found a.md#*** x+ (+0.50); 2: can answer"}  # scrubbed
    assert list(row) == list(PER_QUERY_COLUMNS)


def test_failed_cases_list_the_misses_and_the_top_five(make_report):
    r = make_report()
    assert failed_cases_markdown(r) == "no failed cases\n"
    r.per_query[0]["missed@10"] = ["a.md#x"]
    r.per_query[0]["top"].append({"rank": 2, "chunk_id": "b.md#3", "header": "Other", "score": 0.5,
                                  "relevant": False, "hop": 0})
    assert failed_cases_markdown(r) == ("## q1: what does lethal do\nmissed@10: a.md#x\n"
                                        "  1. * Lethal (a.md#0)\n  2.   Other (b.md#3)\n\n")


def test_secrets_from_the_environment_are_masked_and_credential_params_dropped(monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-123456789")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # under 6 characters: too short to mask safely
    assert scrub("key sk-123456789 and abc") == "key *** and abc"
    assert safe_params({"llm.api_key": "x", "index.name": "sk-123456789-idx", "retrieval.top_k": 5}) == {
        "index.name": "***-idx", "retrieval.top_k": "5"}
