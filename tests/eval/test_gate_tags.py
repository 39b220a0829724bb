"""Per-tag gates and Holm's correction, on hand-built runs whose exact sign-flip p-values are computed by hand:
n non-zero differences all of one sign give p = 2 / 2**n."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.gate import BLOCK, PASS, WARN, MetricRule, Policy, judge, load_policy, to_junit, to_markdown
from ragrig.eval.stats import holm

XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit-10.xsd"


def test_holm_by_hand():
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> running max 0.02 0.03 0.06 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5] and holm([]) == []
    assert holm([0.4, 0.5]) == pytest.approx([0.8, 0.8])  # capped at 1 and non-decreasing
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])


def runs(n_multi: int, n_single: int, drop: float) -> tuple[dict, dict]:
    """Base: every case at 0.8; candidate: the multi-hop cases ``drop`` lower, the single-hop ones unchanged."""
    def rows(multi_value: float) -> list[dict]:
        out = []
        for i in range(n_multi + n_single):
            multi = i < n_multi
            v = multi_value if multi else 0.8
            m = {"ndcg@10": v, "recall@10": v, "mrr@10": v, "hit_rate@10": 1.0, "mrr@100": 1.0}
            out.append({"id": f"q{i}", "query": f"q {i}", "tags": ["multi-hop"] if multi else ["single-hop"],
                        "metrics": m})
        return out

    return ({"testset": "t", "per_query": rows(0.8)}, {"testset": "t", "per_query": rows(0.8 - drop)})


def policy(correction: str = "holm", overall_drop: float = 0.5, must_pass: list[str] | None = None) -> Policy:
    return Policy(metrics={"ndcg@10": MetricRule(max_drop=overall_drop)},
                  tags={"multi-hop": {"ndcg@10": MetricRule(max_drop=0.02, alpha=0.05)}},
                  correction=correction, must_pass=must_pass or [], k=10)


def checks(r) -> dict:
    return {c.name: c for c in r.checks}


def test_a_tag_gate_blocks_a_change_that_hurts_only_that_tag():
    base, cand = runs(10, 10, 0.3)  # overall drop 0.15 (within 0.5), multi-hop drop 0.3
    r = judge(base, cand, policy())
    c = checks(r)
    assert r.verdict == BLOCK and r.correction == "holm" and r.tests == 2
    assert c["ndcg@10"].verdict == WARN and c["ndcg@10"].delta == pytest.approx(-0.15) and c["ndcg@10"].n == 20
    tag = c["ndcg@10 [multi-hop]"]
    # both tests: 10 negative differences -> raw p = 2/1024; Holm: 2 x 2/1024, then the running max
    assert tag.p_raw == pytest.approx(2 / 1024) and tag.p == pytest.approx(4 / 1024)
    assert c["ndcg@10"].p == pytest.approx(4 / 1024)
    assert tag.verdict == BLOCK and tag.n == 10 and tag.tag == "multi-hop"
    assert "Holm-corrected p=0.0039 < 0.05" in tag.reason


def test_holm_turns_a_marginal_block_into_a_warn():
    base, cand = runs(6, 6, 0.3)  # six differences per test: raw p = 2/64 = 0.03125 < 0.05 in both
    corrected = checks(judge(base, cand, policy()))["ndcg@10 [multi-hop]"]
    assert corrected.p_raw == pytest.approx(0.03125) and corrected.p == pytest.approx(0.0625)
    assert corrected.verdict == WARN and "not significant (Holm-corrected p=0.0625 >= 0.05)" in corrected.reason
    uncorrected = judge(base, cand, policy(correction="none"))
    assert uncorrected.correction == "none" and checks(uncorrected)["ndcg@10 [multi-hop]"].verdict == BLOCK
    assert checks(uncorrected)["ndcg@10 [multi-hop]"].p == pytest.approx(0.03125)


def test_markdown_and_junit_say_the_p_values_are_corrected():
    from lxml import etree

    base, cand = runs(10, 10, 0.3)
    r = judge(base, cand, policy(must_pass=["q0", "q15"]))
    md = to_markdown([r])
    assert "Holm-corrected over the 2 (metric, tag) tests of this test set" in md
    assert "| check | n | baseline | candidate | Δ | p (Holm) | p raw | verdict | reason |" in md
    assert "| ndcg@10 [multi-hop] | 10 | 0.8000 | 0.5000 | -0.3000 | 0.0039 | 0.0020 | BLOCK |" in md
    xml = to_junit([r])
    doc = etree.fromstring(xml.encode())
    etree.XMLSchema(etree.parse(str(XSD))).assertValid(doc)
    cases = doc.findall("testsuite/testcase")
    # one testcase per gated (metric, tag) and per must-pass case
    assert [c.get("name") for c in cases] == ["ndcg@10", "ndcg@10 [multi-hop]", "must-pass: q0", "must-pass: q15"]
    tag = cases[1]
    assert tag.find("failure") is not None
    assert tag.find("system-out").text == "p (Holm, 2 tests)=0.003906 p raw=0.001953 n=10"
    assert "Holm-corrected" in doc.find("testsuite/system-out").text
    assert doc.find("testsuite").get("failures") == "1"


def test_one_test_is_not_corrected_and_a_missing_tag_only_warns():
    base, cand = runs(4, 4, 0.0)
    r = judge(base, cand, Policy(metrics={"ndcg@10": MetricRule()}))
    assert r.correction == "none" and r.tests == 1 and "nothing to correct" in r.p_note
    r = judge(base, cand, Policy(metrics={"ndcg@10": MetricRule()}, tags={"comparison": {"ndcg@10": MetricRule()}}))
    assert checks(r)["ndcg@10 [comparison]"].verdict == WARN and r.verdict == WARN
    assert checks(r)["ndcg@10"].verdict == PASS


def test_must_pass_case_missing_from_the_candidate_blocks():
    base, cand = runs(2, 2, 0.0)
    cand["per_query"] = cand["per_query"][1:]  # q0's evidence is gone: the case could not be evaluated
    r = judge(base, cand, Policy(metrics={"ndcg@10": MetricRule()}, must_pass=["q0"]))
    lost = checks(r)["must-pass: q0"]
    assert lost.verdict == BLOCK and "missing from the candidate" in lost.reason
    with pytest.raises(InputError, match="must_pass case 'nope' is in neither run"):
        judge(base, cand, Policy(must_pass=["nope"]))


def test_policy_file_with_tags(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text("metrics:\n  ndcg@10: {max_drop: 0.05}\ntags:\n  multi-hop:\n    recall@10: {max_drop: 0.03}\n")
    pol = load_policy(p)
    assert pol.tags["multi-hop"]["recall@10"].max_drop == 0.03 and pol.correction == "holm"
    p.write_text("tags:\n  multi-hop:\n    recall@10: {max_dorp: 0.03}\n")
    with pytest.raises(InputError, match=r"policy.yaml:3: tags.multi-hop.recall@10.max_dorp"):
        load_policy(p)
    p.write_text("correction: bonferroni\n")
    with pytest.raises(InputError, match="correction"):
        load_policy(p)
