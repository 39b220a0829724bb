"""`ragrig testset draft` and `check --write` never change a test set the user did not mean to (hostile probes,
2026-11-29: `draft -o` replaced a hand-written test set silently; `check --write --accept nope` rewrote the file
and said "0 edit(s) accepted"; `draft --per-kind 0` was told "no section has enough text")."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.flows.cli import main

DOCS = {"a.md": "# Alpha\n\n## Moving\n\nAn operative moves up to six inches in a turn, around terrain and never "
                "through an enemy model. Moving through difficult ground costs two inches for every inch.\n\n"
                "## Cover\n\nAn operative behind light terrain is in cover: it rolls one extra defence dice, and a "
                "retained normal save counts as a critical save when the attacker uses a precise weapon.\n"}
TESTSET = "name: tiny\ncases:\n  - id: move\n    query: how far do I move\n    expect:\n      - doc: a.md\n"


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_draft_never_overwrites_a_test_set_without_force(published, tmp_path, capsys):
    corpus = published(DOCS)
    mine = tmp_path / "mine.yaml"
    mine.write_text(TESTSET)
    assert main(["testset", "draft", "-o", str(mine), *sets(corpus)]) == 2
    assert "--output" in (line := one_line(capsys)) and "exists" in line and "--force" in line
    assert mine.read_text() == TESTSET
    assert main(["testset", "draft", "-o", str(mine), "--force", *sets(corpus)]) == 0
    assert mine.read_text() != TESTSET and "cases:" in mine.read_text()


@pytest.mark.parametrize("n", ["0", "-1", "100000000"])
def test_draft_per_kind_out_of_range_names_the_option(published, tmp_path, capsys, n):
    corpus = published(DOCS)
    assert main(["testset", "draft", "-o", str(tmp_path / "d.yaml"), "--per-kind", n, *sets(corpus)]) == 2
    assert one_line(capsys).startswith(f"error: --per-kind {n}: between 1 and ")
    assert not (tmp_path / "d.yaml").exists()


def test_check_accept_of_an_unknown_case_writes_nothing(published, tmp_path, capsys):
    corpus = published(DOCS)
    ts = tmp_path / "ts.yaml"
    ts.write_text(TESTSET)
    before = ts.stat().st_mtime_ns
    assert main(["testset", "check", "-t", str(ts), "--write", "--accept", "nope", *sets(corpus)]) == 2
    assert one_line(capsys) == "error: --accept 'nope': no case of that id in the test set(s); nothing was written"
    assert ts.read_text() == TESTSET and ts.stat().st_mtime_ns == before
