"""The user's text stays the user's text: Markdown and plain text are indexed as written (chunk offsets are the
file's), and a test set whose sections are copied from the source resolves on Markdown, HTML and DOCX alike,
whatever inline markup, attribute lists or converter spacing the header carries."""

from __future__ import annotations


import pytest
from ragrig.eval.relevance import resolve_testset
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline

pytestmark = pytest.mark.slow

MD = """---
title: Schema guide
# a YAML comment, not a header
---
# Schema guide

Intro with a [link](https://example.org) and a <!-- note -->comment.

## Rebuilding a `TypeAdapter`'s schema {#rebuild}

Call `rebuild()` when a forward reference could not be resolved.

### The `defer_build` *setting*

Defer building until first use.

## Strict **mode** {: .important }

Strict mode refuses coercion.
"""
HTML = ("<html><body><h1>Schema guide</h1><p>Intro.</p><h2>Rebuilding a <code>TypeAdapter</code>'s schema</h2>"
        "<p>Call rebuild() when a forward reference could not be resolved.</p><h3>The <code>defer_build</code> "
        "<em>setting</em></h3><p>Defer building until first use.</p><h2>Strict <b>mode</b></h2>"
        "<p>Strict mode refuses coercion.</p></body></html>")
TXT = "Plain notes, kept exactly as written.\n\nA second paragraph.\n"
SECTIONS = ["Rebuilding a `TypeAdapter`'s schema {#rebuild}", "The `defer_build` *setting*",
            "Strict **mode** {: .important }", "Schema guide > Rebuilding a `TypeAdapter`'s schema {#rebuild}"]


DOCX = [(1, "Schema guide", "Intro."),
        (2, "Rebuilding a TypeAdapter's schema", "Call rebuild() when a forward reference could not be resolved."),
        (3, "The defer_build setting", "Defer building until first use."),
        (2, "Strict mode", "Strict mode refuses coercion.")]  # (heading level, heading, paragraph)


@pytest.mark.parametrize("extractor", ["plain", "docling"])
def test_a_test_set_copied_from_the_source_resolves_on_md_html_and_docx(tmp_path, write_files, write_docx,
                                                                        make_config, embedder, extractor):
    corpus = write_files(tmp_path / "corpus", {"guide.md": MD, "guide.html": HTML, "notes.txt": TXT})
    write_docx(corpus / "guide.docx", DOCX)
    cfg = make_config(corpus, f"corpus.markdown_extractor={extractor}")
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    stats = pipe.run()
    assert stats.docs_failed == 0 and stats.docs_seen == 4
    docs = IndexVersion.current(cfg).documents_by_id
    cases = [Case(id=f"c{i}-{doc.split('.')[1]}", query="q", expect=[Expectation(doc=doc, section=s)])
             for doc in ("guide.md", "guide.html", "guide.docx") for i, s in enumerate(SECTIONS)]
    targets = resolve_testset(TestSet(name="t", cases=cases), docs)
    for doc in ("guide.md", "guide.html", "guide.docx"):
        text = {t.key: t.text for c, ts in targets.items() if c.endswith(doc.split(".")[1]) for t in ts}
        assert any("forward reference" in v and "first use" in v for v in text.values())  # the H2 with its H3
        assert any("refuses coercion" in v and "forward reference" not in v for v in text.values())


def test_markdown_and_text_are_indexed_as_written(tmp_path, write_files, make_config, embedder):
    corpus = write_files(tmp_path / "corpus", {"guide.md": MD, "notes.txt": TXT})
    cfg = make_config(corpus)
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().docs_failed == 0
    version = IndexVersion.current(cfg)
    docs = version.documents_by_id
    assert docs["guide.md"].markdown == MD and docs["notes.txt"].markdown == TXT  # the file's own text
    assert docs["guide.md"].metadata["title"] == "Schema guide"
    for c in version.chunks:
        source = MD if c.doc_id == "guide.md" else TXT
        assert source[c.start:c.end] == c.text  # offsets into the user's file
    by_header = {c.header: c for c in version.chunks}
    rebuilt = by_header["Schema guide > Rebuilding a TypeAdapter's schema"]  # clean header path
    assert rebuilt.text.startswith("## Rebuilding a `TypeAdapter`'s schema {#rebuild}")  # text as written
    assert "{#rebuild}" not in rebuilt.search_text and "`TypeAdapter`" not in rebuilt.search_text.splitlines()[0]
    intro = by_header["Schema guide"]
    assert "https://example.org" not in intro.search_text and "link" in intro.search_text
    assert "<!--" not in intro.search_text and "YAML comment" not in " ".join(c.text for c in version.chunks)
