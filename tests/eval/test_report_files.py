"""Issue 36 defect 10: ``compare`` and ``gate --baseline`` given a binary (non-UTF-8) file: one line naming the
file, exit 2 (a raw UnicodeDecodeError, exit 1, before)."""

from __future__ import annotations

import pytest
from ragrig.flows.cli import main


@pytest.fixture
def binary(tmp_path):
    p = tmp_path / "report.json"
    p.write_bytes(b"\xff\xfe\x00\x89PNG\r\n\x1a\n" + bytes(range(256)))
    return p


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_compare_names_a_binary_file(binary, capsys):
    other = binary.with_name("other.json")
    other.write_bytes(binary.read_bytes())
    assert main(["compare", str(binary), str(other)]) == 2
    assert _one_line(capsys) == f"error: {binary}: not a JSON eval report (not UTF-8 text: byte 0)"


def test_gate_names_a_binary_baseline(binary, capsys):
    assert main(["gate", "--baseline", str(binary), "--candidate", str(binary)]) == 2
    assert _one_line(capsys) == f"error: --baseline {binary}: not JSON (not UTF-8 text: byte 0)"


def test_gate_names_a_directory_baseline(tmp_path, capsys):
    assert main(["gate", "--baseline", str(tmp_path), "--candidate", str(tmp_path)]) == 2
    assert _one_line(capsys) == f"error: --baseline {tmp_path}: is a directory, expected a JSON file"
