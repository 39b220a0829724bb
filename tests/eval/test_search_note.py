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


X86_AVX2, X86_VNNI = "x86_64 avx2+fma", "x86_64 avx2+fma+avx512f+avx512_vnni"


@pytest.mark.parametrize(("machines", "says", "never"), [
    ((X86_AVX2, X86_AVX2), "exact in both runs (deterministic: every difference comes from the change itself)", "CPU"),
    ((X86_AVX2, X86_VNNI), f"on different CPUs ({X86_AVX2} (baseline), {X86_VNNI} (candidate))", "from the change itself"),
    (("unknown", X86_VNNI), "deterministic on one kind of CPU; a run written before reports recorded the CPU", "itself"),
])
def test_with_exact_search_a_difference_across_cpus_is_not_called_the_changes(machines, says, never):
    note = search_note("exact", "exact", machines)
    assert says in note and never not in note


def test_a_report_records_its_cpu_and_the_comparison_names_both(make_report):
    from ragrig.eval.compare import machine_of
    from ragrig.retrieval.machine import kind, this_machine

    assert kind("processor : 0\nflags : fpu sse avx2 fma avx512f avx512_vnni\n", "x86_64") == X86_VNNI
    assert kind("Features : fp asimd sha2\n", "aarch64") == "aarch64"  # no flag it tracks: the architecture
    assert kind("", "x86_64") == "x86_64"
    assert this_machine().split()[0] and make_report(machine=this_machine()).to_dict()["index"]["machine"] == this_machine()
    base, cand = make_report(machine=X86_AVX2).to_dict(), make_report(machine=X86_VNNI).to_dict()
    c = compare(base, cand)
    assert c.machines == {"baseline": X86_AVX2, "candidate": X86_VNNI} and "different CPUs" in c.search_note
    assert "different CPUs" in to_markdown([judge(base, cand, Policy(permutations=100))])
    del base["index"]["machine"]
    assert machine_of(base) == "unknown"
    # a hand-edited report: only the characters machine.kind writes reach a terminal, Markdown or JUnit
    for forged, kept in [("x86_64 avx2\x1b[2J[bold]<img src=x>", "x86_64 avx22Jboldimg srcx"), (42, "unknown"),
                         ("\x1b\x07", "unknown"), ("a" * 500, "a" * 120)]:
        assert machine_of({"index": {"machine": forged}}) == kept, forged
    assert machine_of({"index": "not a mapping"}) == "unknown"


def test_a_report_written_before_the_search_was_recorded_is_unknown(make_report):
    rep = make_report().to_dict()
    assert vector_search_of(rep) == "exact"  # recorded by today's reports
    del rep["index"]["vector_search"]
    assert vector_search_of(rep) == "unknown"
    for forged in ("exact\x1b[2J", "[bold]exact", 3, "x" * 40):  # a hand-edited report: not a search's name
        assert vector_search_of({"index": {"vector_search": forged}}) == "unknown", forged


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
