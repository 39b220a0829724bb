"""Evidence fingerprints and the stale-case check on hand-made versions: a renamed header and a moved file are
re-anchored, an edited section is flagged with its word diff, a deleted one is gone; evaluation follows a moved
fingerprinted expectation and fails on a gone one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.lifecycle.check import check_testset, targets, to_markdown, word_diff
from ragrig.eval.lifecycle.fingerprints import EvidenceIndex, fingerprint, section_evidence
from ragrig.eval.relevance import name_section, resolve_case
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.markdown import sections

sys.path.insert(0, str(Path(__file__).parent))
from toy_versions import RULES_V1, RULES_V2, V1, V2, doc  # noqa: E402


def case(cid: str, *expect: Expectation) -> Case:
    return Case(id=cid, query=f"query {cid}", expect=list(expect))


TS = TestSet(name="tiny", cases=[
    case("intro", Expectation(doc="core/rules.md", section="Core Rules")),
    case("dash", Expectation(doc="core/rules.md", section="Movement > Dash", grade=2)),
    case("charge", Expectation(doc="core/rules.md", section="Charge", grade=2)),
    case("shooting", Expectation(doc="core/rules.md", section="Shooting"),
         Expectation(doc="core/rules.md", section="Dash")),
    case("faq", Expectation(doc="faq.md")),
])


def test_fingerprint_is_the_words_of_the_text_hashed():
    # sha256("An operative moves up to three inches.")[:16], computed once by hand
    assert fingerprint("An operative moves up to three inches.") == "da165a72689ba4df"
    assert fingerprint("\n\n  An operative   moves up\tto three\ninches.\n") == "da165a72689ba4df"
    assert fingerprint("An operative moves up to four inches.") != "da165a72689ba4df"


def test_a_section_fingerprints_its_body_not_its_header():
    [dash_v1] = [s for s in sections(RULES_V1) if s.path[-1] == "Dash"]
    [sprint_v2] = [s for s in sections(RULES_V2) if s.path[-1] == "Sprint"]
    ev1, ev2 = section_evidence(V1["core/rules.md"], dash_v1), section_evidence(V2["core/rules.md"], sprint_v2)
    assert ev1.fingerprint == ev2.fingerprint == "da165a72689ba4df"
    assert ev1.text.startswith("### Dash\n") and ev1.body == "\nAn operative moves up to three inches.\n\n"
    assert ev1.where == "core/rules.md#Core Rules > Movement > Dash"
    # the whole document: "# FAQ Answers about the rules." hashed, headers included
    assert EvidenceIndex(V2).find("e61e333d0d29fdbe", whole_document=True)[0].doc_id == "help/faq.md"
    assert EvidenceIndex(V2).find("e61e333d0d29fdbe", whole_document=False) == []


def test_name_section_keeps_the_written_length_and_stays_unique():
    d = V2["core/rules.md"]
    [sprint] = [section_evidence(d, s) for s in sections(RULES_V2) if s.path[-1] == "Sprint"]
    assert name_section(d, sprint, "Movement > Dash") == "Movement > Sprint"
    assert name_section(d, sprint, "Dash") == "Sprint"
    assert name_section(d, sprint, None) == "Sprint"
    twice = doc("t.md", "# T\n\n## A\n\n### X\n\none\n\n## B\n\n### X\n\ntwo\n")
    [second] = [section_evidence(twice, s) for s in sections(twice.markdown) if s.path == ("T", "B", "X")]
    assert name_section(twice, second, "X") == "B > X"  # "X" alone names two sections


def test_word_diff_shows_the_edit_with_context():
    assert word_diff("Charge text here.", "Charge text changed here.") == ["Charge text {+changed+} here."]
    old = "one two three four five six seven eight nine ten eleven twelve"
    new = "one two three four five six SEVEN eight nine ten eleven twelve"
    assert word_diff(old, new, context=2) == ["… five six [-seven-]{+SEVEN+} eight nine …"]
    many = word_diff("a b c d e f g h", "A b C d E f G h", context=0, max_hunks=2)
    assert many == ["[-a-]{+A+} …", "… [-c-]{+C+} …", "(+2 more edits)"]


def test_check_against_the_version_before():
    report = check_testset(TS, V2, "v000002", V1, "v000001")
    status = {c.id: c.status for c in report.cases}
    assert status == {"intro": "changed", "dash": "moved", "charge": "changed", "shooting": "gone", "faq": "moved"}
    assert report.counts == {"ok": 0, "moved": 2, "changed": 2, "gone": 1} and report.gone == ["shooting"]
    by_id = {c.id: c for c in report.cases}
    [dash] = by_id["dash"].expectations
    assert (dash.now_doc, dash.now_section, dash.fingerprint) == ("core/rules.md", "Movement > Sprint",
                                                                  "da165a72689ba4df")
    [charge] = by_id["charge"].expectations
    assert charge.diff == ["Charge text {+changed+} here."] and charge.reference != charge.fingerprint
    # "Core Rules" spans the whole document: Shooting's deletion and Charge's edit changed its text
    [intro] = by_id["intro"].expectations
    assert any("[-" in line for line in intro.diff)
    shooting, old_dash = by_id["shooting"].expectations
    assert shooting.status == "gone" and "matches no header" in shooting.reason
    assert "nowhere in this version" in shooting.reason
    assert old_dash.status == "moved" and old_dash.now_section == "Sprint"  # one gone expectation fails the case
    [faq] = by_id["faq"].expectations
    assert (faq.now_doc, faq.now_section) == ("help/faq.md", None)

    new = targets(report, TS)
    assert set(new) == {"intro", "dash", "charge", "faq"}  # shooting has no evidence in v2
    [t] = new["dash"]
    start = RULES_V2.index("### Sprint")
    assert (t.key, t.doc_id, t.start, t.end, t.grade) == ("core/rules.md#movement > sprint", "core/rules.md", start,
                                                          RULES_V2.index("### Charge"), 2)
    old = targets(report, TS, reference=True)
    assert set(old) == {"intro", "dash", "charge", "shooting", "faq"}
    assert old["dash"][0].start == RULES_V1.index("### Dash")

    md = to_markdown([report.to_dict()])
    assert "### Test set check: tiny on v000002 (reference v000001)" in md
    assert "0 ok, 2 moved, 2 changed, 1 gone" in md
    assert "| shooting | GONE | `core/rules.md#shooting` |" in md
    assert "→ `core/rules.md` § `Movement > Sprint`" in md


def test_without_a_reference_or_fingerprints_only_names_count():
    report = check_testset(TS, V2, "v000002")
    assert {c.id: c.status for c in report.cases} == {"intro": "ok", "dash": "gone", "charge": "ok",
                                                       "shooting": "gone", "faq": "gone"}


def test_the_test_sets_fingerprint_wins_and_evaluation_follows_it():
    fp_dash = "da165a72689ba4df"
    pinned = case("dash", Expectation(doc="core/rules.md", section="Movement > Dash", grade=2, fingerprint=fp_dash))
    # no reference version needed: the fingerprint in the test set is the reference
    [cc] = check_testset(TestSet(name="t", cases=[pinned]), V2, "v000002").cases
    assert cc.status == "moved" and cc.expectations[0].now_section == "Movement > Sprint"
    [t] = resolve_case(pinned, V2, "t.yaml")  # evaluation re-anchors it too
    assert t.key == "core/rules.md#movement > sprint" and t.fingerprint == fp_dash
    gone = case("gone", Expectation(doc="core/rules.md", section="Shooting", fingerprint="0" * 16))
    with pytest.raises(InputError, match=r"t.yaml: case 'gone' expect\[0\]: section 'Shooting' matches no header.*"
                                         r"fingerprint 0000000000000000\) is nowhere"):
        resolve_case(gone, V2, "t.yaml")
    # a fingerprint the section no longer has, with the name still resolving: changed (evaluated where it points)
    edited = case("e", Expectation(doc="core/rules.md", section="Charge", fingerprint=fingerprint("Charge text here.")))
    [ce] = check_testset(TestSet(name="t", cases=[edited]), V2, "v000002", V1, "v000001").cases
    assert ce.status == "changed" and ce.expectations[0].diff == ["Charge text {+changed+} here."]
    assert resolve_case(edited, V2, "t.yaml")[0].start == RULES_V2.index("### Charge")


def test_a_name_that_now_points_at_other_text_follows_the_text():
    # v3: the old Charge text now sits under "Rush", and "Charge" has new text
    v3 = {"r.md": doc("r.md", "# R\n\n## Rush\n\nCharge text here.\n\n## Charge\n\nSomething else.\n")}
    pinned = case("c", Expectation(doc="r.md", section="Charge", fingerprint=fingerprint("Charge text here.")))
    [cc] = check_testset(TestSet(name="t", cases=[pinned]), v3, "v3").cases
    assert cc.status == "moved" and cc.expectations[0].now_section == "Rush"
    assert "its name now points at other text" in cc.expectations[0].reason
