"""Issue 30, items 5 and 6: what discovery meets in a corpus folder.

Before: a FIFO named ``*.md`` hung ``validate`` and ``ingest`` forever (discovery read it); a file name that is
not valid UTF-8 aborted the whole ingest (``UnicodeEncodeError … surrogates not allowed``, exit 1, nothing
published) and ``validate`` did not mention it. Each CLI run here is a subprocess bounded by a timeout, so a
regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

DOCS = {"a.md": "# Alpha\n\n## Moving\n\nMove six inches.\n", "b.md": "# Beta\n\n## Shooting\n\nRoll dice.\n"}
TIMEOUT = 150  # the model loads in each run; a FIFO read would block forever


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def ragrig(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "ragrig", *args], capture_output=True, text=True,
                              timeout=TIMEOUT, errors="backslashreplace")
    except subprocess.TimeoutExpired:
        pytest.fail(f"ragrig {' '.join(args[:2])} did not finish in {TIMEOUT} s (blocked on a FIFO?)")


def test_a_fifo_named_md_is_skipped_with_a_line_by_validate_and_ingest(tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", DOCS)
    os.mkfifo(corpus / "pipe.md")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(corpus / "sock.md"))
    try:
        got = ragrig("validate", "--no-tokens", *sets(corpus))
        assert got.returncode == 0, got.stderr
        assert "pipe.md: skipped: a FIFO (named pipe), not a regular file" in got.stdout, got.stdout
        assert "sock.md: skipped: a socket, not a regular file" in got.stdout, got.stdout
        stats = tmp_path / "stats.json"
        got = ragrig("ingest", "--no-prefect", "-q", *sets(corpus), "--output-json", str(stats))
        assert got.returncode == 0, got.stderr
        s = json.loads(stats.read_text())
        assert s["published"] and s["docs_seen"] == 2 and s["docs_failed"] == 0, s
        assert "pipe.md: skipped: a FIFO (named pipe), not a regular file" in s["warnings"], s["warnings"]
    finally:
        sock.close()


def test_reading_a_fifo_never_blocks(tmp_path):
    from ragrig.retrieval.ingest.discover import NotRegularFile, read_regular

    os.mkfifo(tmp_path / "p.md")
    result: list[object] = []

    def read() -> None:
        try:
            result.append(read_regular(tmp_path / "p.md"))
        except NotRegularFile as exc:
            result.append(exc)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and isinstance(result[0], NotRegularFile), result
    (tmp_path / "f.md").write_bytes(b"# x\n")
    assert read_regular(tmp_path / "f.md") == b"# x\n"


def corpus_with_a_latin1_name(tmp_path: Path, write_files) -> Path:
    corpus = write_files(tmp_path / "corpus", DOCS)
    bad = os.fsencode(corpus) + b"/caf\xe9.md"  # Latin-1 é: not UTF-8
    with open(bad, "wb") as fh:
        fh.write(b"# Cafe\n\n## Menu\n\nCoffee.\n")
    return corpus


def test_validate_names_a_file_whose_name_is_not_utf8(tmp_path, write_files):
    corpus = corpus_with_a_latin1_name(tmp_path, write_files)
    got = ragrig("validate", "--no-tokens", *sets(corpus))
    assert got.returncode == 1, got.stderr  # an error finding (before: "3 files: 0 errors")
    assert "error   caf\\xe9.md: the file name is not valid UTF-8" in got.stdout, got.stdout


def test_a_file_name_that_is_not_utf8_fails_alone_and_the_rest_publishes(tmp_path, write_files):
    corpus = corpus_with_a_latin1_name(tmp_path, write_files)
    stats = tmp_path / "stats.json"
    got = ragrig("ingest", "--no-prefect", "-q", "--max-failures", "1", *sets(corpus), "--output-json", str(stats))
    assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr
    s = json.loads(stats.read_text())
    assert s["published"] and s["docs_failed"] == 1 and s["chunks"] == 2, s
    assert s["failures"] == [{"doc_id": "caf\\xe9.md", "stage": "discover",
                              "reason": "the file name is not valid UTF-8: rename the file (shown here with its "
                                        "bytes escaped)"}], s["failures"]
    got = ragrig("query", "move", "--json", "--local", *sets(corpus))
    assert got.returncode == 0 and json.loads(got.stdout)["hits"][0]["doc_id"] == "a.md", got.stderr
