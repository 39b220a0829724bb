"""The regression gate: verdict rules on hand-built runs, policy validation, matching reports to baselines,
JUnit XML against the schema, and Markdown as a table. The CLI's exit codes: tests/flows/cli/test_cli_gate.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.gate import (
    BLOCK,
    PASS,
    WARN,
    MetricRule,
    Policy,
    baseline_payload,
    judge,
    judge_all,
    load_baselines,
    load_policy,
    to_junit,
    to_markdown,
)

XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit-10.xsd"


def run(values: list[float], name: str = "t", hits: list[int] | None = None) -> dict:
    hits = hits if hits is not None else [1 if v > 0 else 0 for v in values]
    rows = []
    for i, (v, h) in enumerate(zip(values, hits)):
        m = {"ndcg@10": v, "recall@10": v, "mrr@10": v, "hit_rate@10": float(h), "mrr@100": 1.0 if h else 0.0}
        rows.append({"id": f"q{i}", "query": f"query {i}", "tags": ["single-hop"], "metrics": m})
    return {"testset": name, "testset_sha256": "abc", "per_query": rows}


POLICY = Policy(metrics={"ndcg@10": MetricRule(max_drop=0.02, alpha=0.05)}, k=10)


def verdicts(result):
    return {c.name: c.verdict for c in result.checks}


def test_no_drop_passes():
    r = judge(run([0.5] * 20), run([0.5] * 20), POLICY)
    assert r.verdict == PASS and verdicts(r) == {"ndcg@10": PASS}


def test_drop_within_the_allowance_warns():
    cand = [0.5] * 20
    cand[0] = 0.3  # mean drop 0.2 / 20 = 0.01 <= 0.02
    r = judge(run([0.5] * 20), run(cand), POLICY)
    assert r.verdict == WARN and "within the allowed 0.0200" in r.checks[0].reason


def test_large_but_not_significant_drop_warns():
    # one query of four drops 0.4: mean drop 0.1 > 0.02, but the exact sign-flip test gives p = 1
    r = judge(run([0.5, 0.5, 0.5, 0.5]), run([0.1, 0.5, 0.5, 0.5]), POLICY)
    assert r.verdict == WARN and r.checks[0].p == pytest.approx(1.0) and "not significant" in r.checks[0].reason


def test_large_significant_drop_blocks_and_names_flipped_queries():
    base = run([0.8] * 20)
    cand_vals = [0.3] * 20
    cand_vals[3] = 0.0
    cand = run(cand_vals)
    r = judge(base, cand, POLICY)
    assert r.verdict == BLOCK and r.checks[0].p < 0.05 and "significant" in r.checks[0].reason
    assert [(f["id"], f["direction"]) for f in r.flips] == [("q3", "lost")]


def test_must_pass_case_that_loses_its_hit_blocks():
    policy = Policy(metrics={"ndcg@10": MetricRule()}, must_pass=["q1", "q2"], k=10)
    base = run([0.5, 0.5, 0.0], hits=[1, 1, 0])
    cand = run([0.5, 0.0, 0.0], hits=[1, 0, 0])
    r = judge(base, cand, policy)
    assert verdicts(r)["must-pass: q1"] == BLOCK and verdicts(r)["must-pass: q2"] == WARN
    assert r.verdict == BLOCK
    with pytest.raises(InputError, match="must_pass case 'nope'"):
        judge(base, cand, Policy(must_pass=["nope"]))


def test_policy_file_errors_name_the_file_line_and_key(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text("metrics:\n  ndcg@10: {max_drop: 0.02, alfa: 0.05}\n")
    with pytest.raises(InputError, match=r"policy.yaml:2: metrics.ndcg@10.alfa: unknown key"):
        load_policy(p)
    p.write_text("metrics:\n  ndcg@10: {max_drop: -1}\n")
    with pytest.raises(InputError, match="max_drop"):
        load_policy(p)
    assert load_policy(None).metrics.keys() == {"ndcg@10", "recall@10", "mrr@10"}


def test_junit_xml_validates_against_the_schema_and_counts_failures():
    from lxml import etree

    blocked = judge(run([0.8] * 20), run([0.3] * 20), POLICY)
    warned = judge(run([0.5] * 20, name="other"), run([0.5] * 19 + [0.3], name="other"), POLICY)
    xml = to_junit([blocked, warned])
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.fromstring(xml.encode())
    schema.assertValid(doc)
    suites = doc.findall("testsuite")
    assert [s.get("name") for s in suites] == ["retrieval.t", "retrieval.other"]
    assert suites[0].get("failures") == "1" and suites[1].get("failures") == "0"
    assert doc.get("tests") == "2" and doc.get("failures") == "1"
    assert suites[0].find("testcase/failure").get("message").startswith("dropped 0.5000")
    assert suites[1].find("testcase/system-out").text.startswith("WARN:")


def test_markdown_renders_as_a_table():
    from markdown_it import MarkdownIt

    r = judge(run([0.8] * 20), run([0.3] * 20), POLICY)
    html = MarkdownIt().enable("table").render(to_markdown([r]))
    assert "<table>" in html and "<th>check</th>" in html and "<td>ndcg@10</td>" in html and "BLOCK" in html


def test_each_report_is_judged_against_the_baseline_of_its_test_set():
    baselines = {"a": run([0.8] * 20, name="a"), "b": run([0.5] * 20, name="b")}
    results = judge_all(baselines, [run([0.5] * 20, name="b"), run([0.3] * 20, name="a")], POLICY)
    assert [(r.testset, r.verdict) for r in results] == [("b", PASS), ("a", BLOCK)]
    # one baseline run and one report: judged against each other whatever the test sets are called
    [r] = judge_all({"old-name": run([0.5] * 20, name="old-name")}, [run([0.5] * 20, name="new-name")], POLICY)
    assert r.verdict == PASS
    with pytest.raises(InputError, match=r"the baseline has no run for test set 'c' \(it has: \['a', 'b'\]\)"):
        judge_all(baselines, [run([0.5] * 20, name="c")], POLICY)


def test_baselines_from_a_file_by_test_set(tmp_path, make_config):
    p = tmp_path / "base.json"
    p.write_text(json.dumps(baseline_payload([{**run([0.8] * 3, name="a"), "per_tag": {}, "overall": {}},
                                              {**run([0.5] * 3, name="b"), "per_tag": {}, "overall": {}}])))
    (tmp_path / "corpus").mkdir()
    got = load_baselines(str(p), make_config())
    assert sorted(got) == ["a", "b"] and [q["metrics"]["ndcg@10"] for q in got["b"]["per_query"]] == [0.5] * 3
    with pytest.raises(InputError, match="file not found"):
        load_baselines(str(tmp_path / "missing.json"), make_config())


# ---- issue 19, item 6: a partial comparison is said everywhere, and blocks unless the policy allows it ----------
def subset(r: dict, keep: int) -> dict:
    return {**r, "per_query": r["per_query"][:keep]}


def test_a_candidate_with_only_some_of_the_baselines_cases_blocks():
    base = run([0.5] * 100)
    r = judge(base, subset(run([0.5] * 100), 5), POLICY)
    assert r.verdict == BLOCK and verdicts(r) == {"coverage": BLOCK, "ndcg@10": PASS}
    reason = r.checks[0].reason
    assert "compared on 5 of the baseline's 100 cases: 95 left out (q5, q6, q7, …)" in reason
    assert "allow_subset: true" in reason
    md = to_markdown([r])
    assert "**Partial comparison:** compared on 5 of the baseline's 100 cases" in md and "| coverage |" in md
    xml = to_junit([r])
    assert 'name="coverage"' in xml and "95 left out" in xml and 'failures="1"' in xml


def test_a_subset_is_a_warning_when_the_policy_allows_it_and_new_cases_are_a_warning():
    policy = Policy(metrics={"ndcg@10": MetricRule()}, allow_subset=True)
    r = judge(run([0.5] * 10), subset(run([0.5] * 10), 4), policy)
    assert r.verdict == WARN and verdicts(r)["coverage"] == WARN and "the policy allows a subset" in r.checks[0].reason
    grown = judge(run([0.5] * 4), run([0.5] * 6), POLICY)
    assert grown.verdict == WARN and verdicts(grown)["coverage: new cases"] == WARN
    assert "2 cases are not in the baseline and were not judged (q4, q5)" in grown.checks[0].reason
    assert judge(run([0.5] * 4), run([0.5] * 4), POLICY).checks[0].name == "ndcg@10"  # same cases: no check


def test_the_policy_file_takes_allow_subset(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text("allow_subset: true\n")
    assert load_policy(p).allow_subset is True and load_policy(None).allow_subset is False
