"""BEIR records read back at extraction through one open corpus file per batch (``ingest/beir_records.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ragrig.retrieval.ingest import beir_records
from ragrig.retrieval.ingest.beir_records import RecordError, RecordFiles, beir_source
from ragrig.retrieval.ingest.discover import discover_beir
from ragrig.retrieval.ingest.extract import extract_sources


def corpus(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps({"_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


@pytest.fixture
def opens(monkeypatch):
    """Every file ``beir_records`` opens, in order."""
    seen: list = []
    real = beir_records.open_regular

    def spy(path):
        fh = real(path)
        seen.append(fh)
        return fh

    monkeypatch.setattr(beir_records, "open_regular", spy)
    return seen


def test_a_batch_reads_its_records_through_one_open_file_closed_at_the_end(make_config, tmp_path, opens):
    """One open per corpus file per batch (it was one per record: at 100k records under the threaded local runner
    the opens' system calls cost 19 s of GIL hand-offs), and the file is closed when the batch is done."""
    corpus(tmp_path / "corpus", 5)
    cfg = make_config(tmp_path / "corpus", "corpus.format=beir")
    sources = discover_beir(cfg.corpus).docs
    docs, failed = extract_sources(cfg, sources[::-1])  # any order: each record is found by its offset
    assert failed == []
    assert [(d.doc_id, d.metadata["title"], d.markdown) for d in docs] == \
        [(f"d{i}", f"T{i}", f"# T{i}\n\ntext {i}\n") for i in range(4, -1, -1)]
    assert len(opens) == 1 and opens[0].closed
    extract_sources(cfg, sources[:2])
    extract_sources(cfg, sources[2:])
    assert len(opens) == 3 and all(fh.closed for fh in opens)


def test_a_corpus_file_gone_is_each_records_one_line_and_is_tried_once_per_batch(make_config, tmp_path, opens):
    path = corpus(tmp_path / "corpus", 3)
    cfg = make_config(tmp_path / "corpus", "corpus.format=beir")
    sources = discover_beir(cfg.corpus).docs
    path.unlink()
    docs, failed = extract_sources(cfg, sources)
    assert docs == [] and opens == []
    assert [(f.doc_id, f.stage, f.reason) for f in failed] == \
        [(f"d{i}", "extract", "cannot read corpus.jsonl (No such file or directory)") for i in range(3)]


def test_a_record_changed_in_the_open_file_fails_alone(tmp_path):
    """Through one open file, as through one per record: the record whose line changed since discovery is its own
    one line, the records around it read as discovered."""
    from ragrig.configs.models import CorpusConfig

    path = corpus(tmp_path, 3)
    a, b, c = discover_beir(CorpusConfig(path=str(path))).docs
    path.write_bytes(path.read_bytes().replace(b"text 1", b"text X"))
    with RecordFiles() as files:
        assert beir_source(a, files) == ("T0", "text 0") and beir_source(c, files) == ("T2", "text 2")
        with pytest.raises(RecordError, match=rf"^corpus\.jsonl changed during the ingest: the record at byte "
                                              rf"{b.offset} is no longer this document's \(run the ingest again\)$"):
            beir_source(b, files)
    assert beir_source(a) == ("T0", "text 0")  # without a batch's files: opened for the one record
