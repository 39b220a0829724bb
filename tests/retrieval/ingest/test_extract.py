"""Extraction to Markdown: docling for md/html/docx, BEIR records as-is, and clear errors for bad files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from ragrig.retrieval.documents import SourceDoc, sha256_bytes
from ragrig.retrieval.ingest.extract import ExtractionError, Extractor, beir_markdown
from ragrig.retrieval.markdown import parse_headers

FORMAT = {".md": "md", ".html": "html", ".docx": "docx"}

# The first docling conversion in a process pays ~3 s of imports and converter setup.
docling = pytest.mark.slow


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor()


def source(path: Path) -> SourceDoc:
    data = path.read_bytes()
    return SourceDoc(doc_id=path.name, sha256=sha256_bytes(data), format=FORMAT[path.suffix], size=len(data), path=path)


def headers(markdown: str) -> list[tuple[int, str]]:
    return [(h.level, h.title) for h in parse_headers(markdown)]


@docling
def test_markdown_keeps_headings_and_strips_frontmatter(extractor, tmp_path):
    p = tmp_path / "rules.md"
    p.write_text(
        "---\ntitle: Rules\nversion: 2\ndate: 2024-01-05\n---\n"
        "# Alpha\n\nSome text.\n\n## Beta\n\nMore text here.\n\n### Gamma\n\n"
        "```\n# not a header\n```\n\n#### Delta\n\nDeep.\n",
        encoding="utf-8",
    )
    d = extractor.extract(source(p))
    assert headers(d.markdown) == [(1, "Alpha"), (2, "Beta"), (3, "Gamma"), (4, "Delta")]
    assert "More text here." in d.markdown and "# not a header" in d.markdown
    assert "title:" not in d.markdown
    assert d.metadata == {"title": "Rules", "version": 2, "date": "2024-01-05", "format": "md"}
    assert (d.doc_id, d.format, d.warnings) == ("rules.md", "md", [])


@docling
def test_markdown_with_bad_frontmatter_warns_and_goes_on(extractor, tmp_path):
    p = tmp_path / "bad-fm.md"
    p.write_text("---\ntitle: [oops\n---\n# A\n\ntext\n", encoding="utf-8")
    d = extractor.extract(source(p))
    assert headers(d.markdown) == [(1, "A")]
    assert "oops" not in d.markdown
    assert len(d.warnings) == 1 and d.warnings[0].startswith("frontmatter is not valid YAML")


@docling
def test_html_headings_paragraphs_and_table(extractor, tmp_path):
    p = tmp_path / "page.html"
    p.write_text(
        "<html><head><title>ignored</title></head><body>"
        "<h1>Veil Stalkers</h1><p>Shadow hunters.</p>"
        "<h2>Abilities</h2><p>They hide well.</p>"
        "<table><tr><th>Name</th><th>Range</th></tr><tr><td>Needle Pistol</td><td>8</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    d = extractor.extract(source(p))
    assert headers(d.markdown) == [(1, "Veil Stalkers"), (2, "Abilities")]
    assert "Shadow hunters." in d.markdown and "They hide well." in d.markdown
    table_rows = [line for line in d.markdown.splitlines() if line.startswith("|")]
    assert len(table_rows) == 3  # header, separator, one row
    assert "Needle Pistol" in table_rows[2] and "8" in table_rows[2]
    assert d.metadata == {"format": "html"}


def make_docx(path: Path, blocks: list[tuple[str, int, str]]) -> Path:
    import docx

    document = docx.Document()
    for kind, level, text in blocks:
        if kind == "h":
            document.add_heading(text, level=level)
        else:
            document.add_paragraph(text)
    document.save(str(path))
    return path


@docling
def test_docx_heading_levels(extractor, tmp_path):
    p = make_docx(
        tmp_path / "team.docx",
        [
            ("h", 1, "Rustbound Salvagers"),
            ("p", 0, "Scavengers and engineers."),
            ("h", 2, "Faction Abilities"),
            ("p", 0, "Scrap armour turns blows."),
            ("h", 2, "Operatives"),
            ("p", 0, "Foreman and scrappers."),
        ],
    )
    d = extractor.extract(source(p))
    # Word's "Heading 1" is a level-1 heading, like HTML's <h1> and Markdown's '#'
    assert headers(d.markdown) == [(1, "Rustbound Salvagers"), (2, "Faction Abilities"), (2, "Operatives")]
    for text in ("Scavengers and engineers.", "Scrap armour turns blows.", "Foreman and scrappers."):
        assert text in d.markdown
    assert d.metadata == {"format": "docx"}


@docling
def test_docx_with_a_title_keeps_headings_below_it(extractor, tmp_path):
    p = make_docx(
        tmp_path / "titled.docx",
        [("h", 0, "Handbook"), ("h", 1, "Chapter One"), ("p", 0, "Words."), ("h", 2, "Section"), ("p", 0, "More.")],
    )
    d = extractor.extract(source(p))
    assert headers(d.markdown) == [(1, "Handbook"), (2, "Chapter One"), (3, "Section")]


@docling
@pytest.mark.parametrize(
    "name, data",
    [
        ("random.docx", random.Random(7).randbytes(2048)),
        ("truncated.docx", b"PK\x03\x04" + b"\x00" * 64),
    ],
)
def test_corrupt_docx_raises_extraction_error(extractor, tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(ExtractionError) as ei:
        extractor.extract(source(p))
    assert str(ei.value)  # a reason for the run summary


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("empty.md", b"", "empty file"),
        ("blank.md", b"  \n\n\t\n", "empty file"),
        ("empty.docx", b"", "empty file"),
        ("binary.md", bytes(range(256)) * 4, "binary content (NUL bytes) in a text document"),
        ("latin1.md", "# Café\n\ncrème brûlée\n".encode("latin-1"),
         "not valid UTF-8 (invalid continuation byte at byte 5)"),
        ("only-frontmatter.md", b"---\ntitle: x\n---\n\n", "no text extracted"),
    ],
)
def test_unusable_files_raise_with_a_clear_reason(extractor, tmp_path, name, data, reason):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(ExtractionError) as ei:
        extractor.extract(source(p))
    assert str(ei.value) == reason


def test_missing_file_is_an_extraction_error(extractor, tmp_path):
    src = SourceDoc(doc_id="gone.md", sha256="0", format="md", size=0, path=tmp_path / "gone.md")
    with pytest.raises(ExtractionError, match="unreadable"):
        extractor.extract(src)


@docling
def test_utf8_bom_is_accepted(extractor, tmp_path):
    p = tmp_path / "bom.md"
    p.write_bytes("\ufeff# Title\n\nBody.\n".encode())
    assert headers(extractor.extract(source(p)).markdown) == [(1, "Title")]


def test_beir_markdown_title_is_h1_and_hashes_are_escaped():
    md = beir_markdown("  Rust   in \n Space ", "# not a header\n   ## nor this\n    # indented code\ntext #1\n")
    assert md == "# Rust in Space\n\n\\# not a header\n   \\## nor this\n    # indented code\ntext #1\n"
    assert headers(md) == [(1, "Rust in Space")]
    assert beir_markdown("", "  just text ") == "just text\n"


def test_beir_record_extracts_without_a_file(extractor):
    src = SourceDoc(doc_id="doc-7", sha256="abc", format="beir", size=10, title="Scurvy",
                    text="# Vitamin C\nprevents it.")
    d = extractor.extract(src)
    assert d.markdown == "# Scurvy\n\n\\# Vitamin C\nprevents it.\n"
    assert (d.doc_id, d.sha256, d.format, d.metadata) == ("doc-7", "abc", "beir", {"title": "Scurvy"})


def test_beir_discovery_keeps_where_each_record_is_and_extraction_reads_it_back(tmp_path, extractor):
    """Discovery holds no record's text (issue 38: the driver's memory), only where its line starts; extraction
    reads the line back and gives the document an in-memory record gives."""
    import json

    from ragrig.configs.models import CorpusConfig
    from ragrig.retrieval.ingest.discover import discover_beir

    records = [{"_id": "a", "title": "Scurvy", "text": "Vitamin C.\n# not a header"},
               {"_id": "b", "text": "Ünïcode ✓"}, {"_id": "c", "title": "Empty"}]
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    (tmp_path / "corpus.jsonl").write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    found = discover_beir(CorpusConfig(path=str(tmp_path)))
    assert [(s.doc_id, s.title, s.text) for s in found.docs] == [(i, None, None) for i in "abc"]
    raw = (tmp_path / "corpus.jsonl").read_bytes()
    assert [raw[s.offset:].split(b"\n", 1)[0].decode() for s in found.docs] == lines
    for src, rec in zip(found.docs, records):
        mem = SourceDoc(src.doc_id, src.sha256, "beir", src.size, title=rec.get("title"), text=rec.get("text"))
        assert extractor.extract(src) == extractor.extract(mem)


def test_a_beir_record_changed_since_discovery_fails_alone_with_one_line(tmp_path, extractor):
    import json

    from ragrig.configs.models import CorpusConfig
    from ragrig.retrieval.ingest.discover import discover_beir

    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"_id": i, "text": f"text {i}"}) + "\n" for i in "abc"), encoding="utf-8")
    a, b, c = discover_beir(CorpusConfig(path=str(path))).docs
    path.write_text("".join(json.dumps({"_id": i, "text": f"text {i}".replace("b", "B")}) + "\n" for i in "abc"),
                    encoding="utf-8")  # b's text edited, its length kept: a's line and c's keep their places
    assert extractor.extract(a).markdown == "text a\n" and extractor.extract(c).markdown == "text c\n"
    assert b.offset == 31
    with pytest.raises(ExtractionError, match=r"^corpus\.jsonl changed during the ingest: the record at byte 31 "):
        extractor.extract(b)
    path.write_text(json.dumps({"_id": "a", "text": "text a"}) + "\n")  # cut short: c's line is gone
    with pytest.raises(ExtractionError, match="changed during the ingest"):
        extractor.extract(c)
    path.unlink()
    with pytest.raises(ExtractionError, match=r"^cannot read corpus\.jsonl \(No such file or directory\)$"):
        extractor.extract(a)


def test_a_beir_corpus_file_swapped_for_a_fifo_since_discovery_fails_without_hanging(tmp_path, extractor):
    """Extraction reopens the corpus file (once a batch: ``beir_records.RecordFiles``): a FIFO in its place (no
    writer) is that document's one-line error at once, as for a document file (``discover.open_regular``), never a
    read that waits forever."""
    import json
    import os
    import threading

    from ragrig.configs.models import CorpusConfig
    from ragrig.retrieval.ingest.discover import discover_beir

    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"_id": "a", "text": "text a"}) + "\n", encoding="utf-8")
    [src] = discover_beir(CorpusConfig(path=str(path))).docs
    path.unlink()
    os.mkfifo(path)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            extractor.extract(src)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            raised.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "extraction blocked on the FIFO"
    assert [type(e) for e in raised] == [ExtractionError]
    assert str(raised[0]) == "cannot read corpus.jsonl (a FIFO (named pipe), not a regular file)"
