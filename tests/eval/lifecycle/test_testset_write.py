"""``ragrig testset check --write``: the YAML is updated in place, comments, order, quoting and flow style kept;
expected files written out by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.lifecycle.check import check_testset
from ragrig.eval.lifecycle.yaml_write import write_check
from ragrig.eval.testset import load_testset

sys.path.insert(0, str(Path(__file__).parent))
from toy_versions import V1, V2  # noqa: E402

BEFORE = """\
# A tiny test set (comments and order must survive --write).
name: tiny
cases:

  # --- rules ---

  - id: dash
    query: "How far can I dash?"   # a paraphrase
    expect:
      - doc: core/rules.md
        section: "Movement > Dash"
        grade: 2
      # the charge section is supporting context
      - {doc: core/rules.md, section: 'Charge'}
    tags: [single-hop]

  - id: shooting
    query: "shooting?"
    expect:
      - doc: core/rules.md
        section: Shooting
  # --- the faq ---
  - id: faq
    expect:
      - doc: faq.md
    query: "faq?"
"""

# dash: re-anchored to "Movement > Sprint" (its quotes kept) with its fingerprint; Charge was edited, so it gets
# the fingerprint of the text it had (6dd142ba9a184413 = "Charge text here.") and stays flagged; shooting is gone
# and untouched; faq.md moved to help/faq.md
AFTER = """\
# A tiny test set (comments and order must survive --write).
name: tiny
cases:

  # --- rules ---

  - id: dash
    query: "How far can I dash?"   # a paraphrase
    expect:
      - doc: core/rules.md
        section: "Movement > Sprint"
        grade: 2
        fingerprint: "da165a72689ba4df"
      # the charge section is supporting context
      - {doc: core/rules.md, section: 'Charge', fingerprint: "6dd142ba9a184413"}
    tags: [single-hop]

  - id: shooting
    query: "shooting?"
    expect:
      - doc: core/rules.md
        section: Shooting
  # --- the faq ---
  - id: faq
    expect:
      - doc: help/faq.md
        fingerprint: "e61e333d0d29fdbe"
    query: "faq?"
"""


@pytest.fixture
def testset(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.yaml"
    p.write_text(BEFORE, encoding="utf-8")
    return p


def test_write_re_anchors_and_fingerprints_keeping_comments_and_order(testset):
    report = check_testset(load_testset(testset), V2, "v000002", V1, "v000001")
    summary = write_check(testset, report)
    assert testset.read_text(encoding="utf-8") == AFTER
    assert (summary.moved, summary.fingerprinted, summary.accepted, summary.exact_layout) == (2, 3, 0, True)
    # checked again: the moved cases are ok now, the edit is still flagged, the gone case still gone
    again = check_testset(load_testset(testset), V2, "v000002", V1, "v000001")
    assert {c.id: c.status for c in again.cases} == {"dash": "changed", "shooting": "gone", "faq": "ok"}
    # a second write changes nothing
    assert not write_check(testset, again).changed_anything and testset.read_text(encoding="utf-8") == AFTER


def test_accepting_an_edit_writes_its_new_fingerprint(testset):
    write_check(testset, check_testset(load_testset(testset), V2, "v000002", V1, "v000001"))
    report = check_testset(load_testset(testset), V2, "v000002")  # the fingerprints in the file are the reference
    assert {c.id: c.status for c in report.cases}["dash"] == "changed"
    summary = write_check(testset, report, accept=["dash"])
    assert summary.accepted == 1 and summary.fingerprinted == 1
    # 8349caa36b6f3b0e = "Charge text changed here."
    assert "- {doc: core/rules.md, section: 'Charge', fingerprint: \"8349caa36b6f3b0e\"}" in testset.read_text()
    assert {c.id: c.status for c in check_testset(load_testset(testset), V2, "v000002").cases}["dash"] == "ok"
    with pytest.raises(InputError, match="--accept: no case 'nope'"):
        write_check(testset, report, accept=["nope"])


def test_a_file_edited_since_the_check_is_not_overwritten(testset):
    report = check_testset(load_testset(testset), V2, "v000002", V1, "v000001")
    testset.write_text(BEFORE.replace("section: Shooting", "section: Shots"), encoding="utf-8")
    with pytest.raises(InputError, match="changed since it was checked"):
        write_check(testset, report)
    assert "section: Shots" in testset.read_text()
