"""`ragrig validate`: pre-ingestion findings, and it writes nothing."""

from __future__ import annotations

from ragrig.flows.cli import main
from ragrig.retrieval.ingest.chunking import whitespace_counter
from ragrig.retrieval.ingest.validate import ERROR, INFO, WARNING, validate_corpus

FILES = {
    "flat.md": "Just a paragraph with no headers at all.\n",
    "dup.md": "# Rules\n\n## Cover\n\nOne.\n\n## Cover\n\nTwo.\n",
    "long.md": "# Long\n\n## Big\n\n" + "\n\n".join("word " * 30 for _ in range(4)) + "\n",
    "binary.md": b"\x00\x01\x02binary",
    "ok.md": "# Fine\n\n## Section\n\nText.\n",
}


def test_findings_by_level(tmp_path, write_files, make_config):
    corpus = write_files(tmp_path / "corpus", FILES)
    report = validate_corpus(make_config(corpus), whitespace_counter, 50)
    got = {(f.level, f.doc_id, f.message) for f in report.findings}
    assert (ERROR, "binary.md", "binary content (NUL bytes) in a text document") in got
    assert (WARNING, "flat.md", "no header at levels 2-4: one section for the whole file") in got
    assert (WARNING, "dup.md", "header path 'Rules > Cover' appears 2 times") in got
    # 30-word paragraphs: one per 46-token budget
    assert (INFO, "long.md", "section 'Long > Big' exceeds the model window: 4 pieces") in got
    assert not any(f.doc_id == "ok.md" for f in report.findings)
    assert report.files == 5 and not report.ok


def test_cli_exit_code_and_nothing_written(tmp_path, write_files, ragrig_home, capsys):
    corpus = write_files(tmp_path / "corpus", {k: v for k, v in FILES.items() if k != "binary.md"})
    assert main(["validate", str(corpus), "--no-tokens", "--set", "retrieval.synonyms=null"]) == 0
    assert "4 files: 0 errors, 2 warnings" in capsys.readouterr().out
    assert not ragrig_home.exists()  # no index, no cache
    (corpus / "binary.md").write_bytes(b"\x00\x01")
    assert main(["validate", str(corpus), "--no-tokens", "--set", "retrieval.synonyms=null"]) == 1
