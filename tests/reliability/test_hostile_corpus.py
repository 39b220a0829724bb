"""A hostile corpus: each file is ingested correctly or recorded as failed with a reason; nothing else
is lost; --max-failures decides when the run fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ragrig.flows.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "hostile"))
from make_hostile import GOOD, build, nested  # noqa: E402
from ragrig.retrieval.documents import Document, sha256_text
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.chunk_stage import chunk_documents, chunking_params
from ragrig.retrieval.ingest.pipeline import IngestPipeline

pytestmark = pytest.mark.slow

def test_hostile_files_are_ingested_or_recorded(tmp_path, make_config, embedder):
    corpus = tmp_path / "corpus"
    build(corpus, nested_headers=600)  # 10,000 nested headers: the next test, without embedding 6,668 sections
    cfg = make_config(corpus)
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    stats = pipe.run()
    failed = {f["doc_id"]: f["reason"] for f in stats.failures}
    assert failed.keys() == {"empty.md", "binary.md", "latin1.md", "corrupt.docx", "not-a-word-file.docx", "loop.md",
                             "outside.md", "one-line.md", "bomb.docx"}, failed
    assert failed["one-line.md"] == "20,000,009 characters > corpus.max_doc_chars (5,000,000)"  # 8 + 20,000,000 + 1
    assert "refused as a zip bomb" in failed["bomb.docx"] and "300 MB" in failed["bomb.docx"]
    assert failed["empty.md"] == "empty file"
    assert "binary content" in failed["binary.md"] and "not valid UTF-8" in failed["latin1.md"]
    assert "outside the corpus root" in failed["outside.md"] and "cannot resolve path" in failed["loop.md"]
    assert "bad zip" in failed["corrupt.docx"] and "docling" in failed["not-a-word-file.docx"]
    v = IndexVersion.current(cfg)
    docs = set(v.documents_by_id)
    assert docs == {"good.md", "copy of good.md", "nested.md", "scripts.html", "règles spéciales ☃.md"}
    html = v.documents_by_id["scripts.html"].markdown
    assert "Visible text." in html and "alert" not in html and "steal" not in html and "iframe" not in html
    nested = [c for c in v.chunks if c.doc_id == "nested.md"]
    assert nested and all(v.documents_by_id["nested.md"].markdown[c.start:c.end] == c.text for c in nested)
    assert stats.docs_failed == 9 and stats.published


def test_ten_thousand_nested_headers_chunk_to_exact_spans(make_config, embedder):
    """The ingest's chunking of 10,000 headers nested 1-6 deep (its token counter and parameters): no failure,
    every chunk's offsets slice back to its text, every body line in exactly one chunk."""
    markdown = nested(10_000)
    doc = Document(doc_id="nested.md", sha256=sha256_text(markdown), format="md", markdown=markdown, metadata={})
    params = chunking_params(make_config(), embedder)
    chunks, failed = chunk_documents([doc], params, embedder, lambda warning: None)
    assert failed == [] and all(c.tokens <= params.max_tokens for c in chunks)
    assert chunks and all(markdown[c.start:c.end] == c.text for c in chunks)
    bodies = [line for c in chunks for line in c.text.splitlines() if line.startswith("body ")]
    assert bodies == [f"body {i}" for i in range(10_000)]


def test_a_file_vanishing_mid_run_is_recorded(tmp_path, make_config, embedder, monkeypatch):
    import ragrig.retrieval.ingest.partition as pl

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text(GOOD)
    (corpus / "gone.md").write_text("# Gone\n\n## Soon\n\nThis file disappears after discovery.\n")
    real = pl.extract_sources

    def vanish_then_extract(cfg, batch, **kw):
        (corpus / "gone.md").unlink(missing_ok=True)
        return real(cfg, batch, **kw)

    monkeypatch.setattr(pl, "extract_sources", vanish_then_extract)
    pipe = IngestPipeline(make_config(corpus))
    pipe.embedder = embedder
    stats = pipe.run()
    assert [(f["doc_id"], f["stage"]) for f in stats.failures] == [("gone.md", "extract")]
    assert "unreadable" in stats.failures[0]["reason"] and stats.published


def test_max_failures_decides_the_exit_code(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text(GOOD)
    (corpus / "empty.md").write_text("")
    (corpus / "binary.md").write_bytes(b"\x00\x01")
    args = ["ingest", "--no-prefect", "-q", "--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null",
            "--output-json", str(tmp_path / "out.json")]
    assert main([*args, "--max-failures", "2"]) == 0
    assert main([*args, "--max-failures", "1"]) == 1
    assert "2 documents failed (> --max-failures 1)" in capsys.readouterr().err
    assert json.loads((tmp_path / "out.json").read_text())["docs_failed"] == 2


def test_an_unreadable_file_is_recorded(tmp_path, make_config, embedder, monkeypatch):
    """Tests run as root, where chmod 000 does not stop reads: the permission error is injected at the read."""
    from pathlib import Path

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text(GOOD)
    (corpus / "secret.md").write_text("# Secret\n\n## Hidden\n\nNot readable.\n")
    import os

    real = os.open

    def open_(path, *args, **kwargs):  # discovery opens a document with os.open (O_NONBLOCK) and fstat
        if Path(path).name == "secret.md":
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    pipe = IngestPipeline(make_config(corpus))
    pipe.embedder = embedder
    stats = pipe.run()
    assert stats.failures == [{"doc_id": "secret.md", "stage": "discover", "reason": "unreadable: Permission denied"}]
    assert stats.published and stats.chunks == 1
