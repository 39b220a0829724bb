"""Every comparison and gate says which vector search answered each run and whether a difference can be
approximate-search noise: in the comparison, the gate's Markdown and JUnit, and baselines."""

from __future__ import annotations

from xml.etree import ElementTree as ET

import pytest
from ragrig.eval.compare import compare, search_note, vector_search_of
from ragrig.eval.gate import Policy, baseline_payload, judge, to_junit, to_markdown


@pytest.mark.parametrize(("base", "cand", "says"), [
    ("exact", "exact", "exact in both runs (deterministic"),
    ("exact", "chroma", "exact (baseline) and chroma (candidate). Chroma's HNSW seeds its graph randomly"),
    ("chroma", "chroma", "differences of that size may be noise"),
    ("unknown", "exact", "re-run it to compare exactly"),
    ("exact", "hnsw", "the two runs searched differently"),
    ("hnsw", "hnsw", "hnsw in both runs (seeded"),
])
def test_search_note(base, cand, says):
    assert says in search_note(base, cand)


def test_a_report_written_before_the_search_was_recorded_is_unknown(make_report):
    rep = make_report().to_dict()
    assert vector_search_of(rep) == "exact"  # recorded by today's reports
    del rep["index"]["vector_search"]
    assert vector_search_of(rep) == "unknown"


def test_compare_and_gate_say_which_search_answered(make_report):
    base = make_report(vector_search="chroma").to_dict()
    cand = make_report(vector_search="exact").to_dict()
    c = compare(base, cand)
    assert c.search == {"baseline": "chroma", "candidate": "exact"} and "may be noise" in c.search_note
    r = judge(base, cand, Policy(permutations=100))
    md = to_markdown([r])
    assert "vector search: chroma (baseline) and exact (candidate)" in md
    suite = ET.fromstring(to_junit([r])).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"vector_search.baseline": "chroma", "vector_search.candidate": "exact"}
    assert any("may be noise" in (o.text or "") for o in suite.findall("system-out"))


def test_a_baseline_keeps_the_search_that_made_it(make_report):
    payload = baseline_payload([make_report(vector_search="hnsw").to_dict()])
    assert payload["runs"][0]["index"]["vector_search"] == "hnsw"
