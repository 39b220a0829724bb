"""tests/sample_part.py: the part holds every format of the sample, and its test set is the sample's own cases,
unedited, each answerable from the part (the end-to-end tests that use it would otherwise pass on nothing)."""

from __future__ import annotations

import yaml
from sample_part import NAME, SAMPLE, TESTSET, make_sample_part


def test_the_part_is_the_samples_files_and_the_cases_it_answers(tmp_path):
    corpus, testset = make_sample_part(tmp_path)
    files = sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file())
    assert {p.rsplit(".", 1)[1] for p in files} == {"md", "html", "docx"}
    assert all((corpus / f).read_bytes() == (SAMPLE / f).read_bytes() for f in files)
    part = yaml.safe_load(testset.read_text(encoding="utf-8"))
    whole = {c["id"]: c for c in yaml.safe_load(TESTSET.read_text(encoding="utf-8"))["cases"]}
    assert part["name"] == NAME and len(part["cases"]) >= 10
    assert all(whole[c["id"]] == c for c in part["cases"])
    assert all(e["doc"] in files for c in part["cases"] for e in c["expect"])
    answerable = [c for c in whole.values() if c.get("expect") and all(e["doc"] in files for e in c["expect"])]
    assert [c["id"] for c in answerable] == [c["id"] for c in part["cases"]]
