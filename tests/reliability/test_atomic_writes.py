"""Issue 30, item 4: every temp + rename writer keeps the file's mode and writes through a symlink.

Before: ``testset check --write`` turned a 0600 test set into 0644, and replaced a symlinked test set by a
regular file, leaving its target unchanged (the same for --output-json, baselines, CURRENT …, all written by
``write_atomic``, and the model-identity memo, written by its own temp + rename).
"""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest
from ragrig.flows.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = {"a.md": "# Alpha\n\n## Moving\n\nMove six inches.\n", "b.md": "# Beta\n\n## Shooting\n\nRoll dice.\n"}
TESTSET = ("# comment kept\nname: tiny\ncases:\n  - id: move\n    query: how far do I move\n    expect:\n"
           "      - doc: a.md\n        section: Moving\n")


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_write_atomic_keeps_the_mode_and_writes_through_symlinks(tmp_path):
    from ragrig.retrieval.atomic import write_atomic

    private = tmp_path / "private.yaml"
    private.write_text("old")
    private.chmod(0o600)
    write_atomic(private, b"new")
    assert private.read_text() == "new" and mode(private) == 0o600

    target = tmp_path / "real" / "t.yaml"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    chain = tmp_path / "chain.yaml"
    chain.symlink_to(link)
    assert write_atomic(chain, b"via chain") == target
    assert link.is_symlink() and chain.is_symlink() and target.read_text() == "via chain" and mode(target) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["t.yaml"]  # no temp file left beside it

    fresh = tmp_path / "new.json"
    old_umask = os.umask(0o022)
    try:
        write_atomic(fresh, b"{}")
    finally:
        os.umask(old_umask)
    assert mode(fresh) == 0o644  # a new file: 0666 less the umask, as open() would make it


def test_testset_check_write_keeps_a_private_test_sets_mode_and_its_symlink(tmp_path, write_files, capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus)]) == 0
    real = tmp_path / "shared" / "tiny.yaml"
    real.parent.mkdir()
    real.write_text(TESTSET)
    real.chmod(0o600)
    link = tmp_path / "tiny.yaml"
    link.symlink_to(real)
    capsys.readouterr()
    assert main(["testset", "check", "-t", str(link), "--write", *sets(corpus)]) == 0, capsys.readouterr().err
    assert "fingerprint(s) written" in capsys.readouterr().out
    assert link.is_symlink() and os.readlink(link) == str(real)  # still a link ...
    assert "fingerprint:" in real.read_text() and "# comment kept" in real.read_text()  # ... its target updated
    assert mode(real) == 0o600

    out = tmp_path / "report.json"
    out.write_text("{}")
    out.chmod(0o600)
    assert main(["testset", "check", "-t", str(link), "--output-json", str(out), *sets(corpus)]) == 0
    assert mode(out) == 0o600 and out.read_text() != "{}"


def test_every_temp_and_rename_writer_is_the_one_helper():
    """No module but retrieval/atomic.py renames a file over another (publish.py renames version *folders*,
    adapt/output.py an adapted model's folder)."""
    allowed = {ROOT / "retrieval" / "atomic.py", ROOT / "retrieval" / "index" / "publish.py",
               ROOT / "retrieval" / "adapt" / "output.py"}
    offenders = []
    for pkg in ("configs", "retrieval", "eval", "tasks", "flows", "ragrig"):
        for path in (ROOT / pkg).rglob("*.py"):
            if path in allowed:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("replace", "rename", "NamedTemporaryFile",
                                                                      "mkstemp"):
                    base = node.value
                    if isinstance(base, ast.Name) and base.id in ("os", "tempfile", "shutil"):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {base.id}.{node.attr}")
    assert not offenders, offenders


@pytest.mark.parametrize("writer", ["identity memo"])
def test_the_model_identity_memo_goes_through_the_helper(tmp_path, writer, monkeypatch):
    from ragrig.retrieval import file_stamps
    from ragrig.retrieval.encoders import identity

    monkeypatch.setattr(file_stamps, "RACY_NS", 0)  # the weights written below count as settled

    model = tmp_path / "model"
    model.mkdir()
    (model / "w.bin").write_bytes(b"weights")
    real = tmp_path / "memo-real.json"
    real.write_text("{}")
    real.chmod(0o600)
    memo = tmp_path / "memo.json"
    memo.symlink_to(real)
    identity.folder_digest(model, memo_file=memo)
    assert memo.is_symlink() and mode(real) == 0o600 and str(model / "w.bin") in real.read_text()
