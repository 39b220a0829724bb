"""``RetrievalResult.to_json`` (what ``ragrig serve`` answers with) says exactly what ``to_dict`` says."""

from __future__ import annotations

import json
import math

import numpy as np
from ragrig.retrieval.results import Hit, RetrievalResult, SourceScore, json_bytes


def _result() -> RetrievalResult:
    hit = Hit("d#0", "d", ["Über", "[/bold] Ränge"], "text with \"quotes\" and ünïcode", 0.75,
              {"bm25": SourceScore(1, 3.5), "vector": SourceScore(4, 0.25)}, hop=1, reason="hop: x", start=3,
              end=9, tokens=2, relevance=None)
    return RetrievalResult("q", "q", "q", ["syn"], None, [hit], "v000002", {"embed": 1.5, "total": 2.0},
                           {"bm25": 10}, [{"hop": 1, "query": "x", "error": "timeout"}], cached=True)


def test_to_json_parses_to_to_dict():
    res = _result()
    assert json.loads(res.to_json()) == res.to_dict()
    assert "ranked" not in json.loads(res.to_json())
    assert "Über" in res.to_json().decode()  # UTF-8, not \\u escapes, like ensure_ascii=False


def test_json_bytes_values_json_cannot_write():
    # numpy numbers as numbers (json.dumps(default=str) wrote them as strings), NaN as null (json.dumps wrote
    # the invalid token NaN), an int key as text, anything else as its str
    got = json.loads(json_bytes({"a": np.float32(0.5), "b": np.int64(3), "c": math.nan, 1: "one",
                                 "d": {1, 2} and frozenset([1]), "e": (1, 2)}))
    assert got == {"a": 0.5, "b": 3, "c": None, "1": "one", "d": "frozenset({1})", "e": [1, 2]}
