"""Issue 27 on converted documents: the same page as Markdown (indexed as written, and through docling, which
escapes the anchor's ``_`` as ``\\_``), HTML and DOCX (docling drops ids: the two "Additional status codes"
headers differ by case only, the two "Example"s by their parent). References resolve to the section the author
wrote, on every format; what a format cannot tell apart is an error naming its candidates."""

from __future__ import annotations

import re

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.relevance import resolve_section
from ragrig.retrieval.documents import Document, SourceDoc, sha256_bytes
from ragrig.retrieval.ingest.extract import Extractor

pytestmark = pytest.mark.slow

MD = """# Additional Status Codes { #additional-status-codes }

Return a JSONResponse to send an additional status code.

## Example { #example }

The example under the page title.

## Additional status codes { #additional-status-codes_1 }

The note on codes other than the default.

### Example { #example_1 }

The example under the note.
"""
HTML = ('<html><body><h1 id="additional-status-codes">Additional Status Codes</h1>'
        "<p>Return a JSONResponse to send an additional status code.</p>"
        '<h2 id="example">Example</h2><p>The example under the page title.</p>'
        '<h2 id="additional-status-codes_1">Additional status codes</h2><p>The note on codes other than the default.</p>'
        '<h3 id="example_1">Example</h3><p>The example under the note.</p></body></html>')
FORMATS = ["md-plain", "md-docling", "html", "docx"]


DOCX = [(1, "Additional Status Codes", "Return a JSONResponse to send an additional status code."),
        (2, "Example", "The example under the page title."),
        (2, "Additional status codes", "The note on codes other than the default."),
        (3, "Example", "The example under the note.")]  # (heading level, heading, paragraph)


@pytest.fixture(scope="module")
def converted(tmp_path_factory, write_docx) -> dict[str, Document]:
    root = tmp_path_factory.mktemp("status")
    (root / "status.md").write_text(MD, encoding="utf-8")
    (root / "status.html").write_text(HTML, encoding="utf-8")
    write_docx(root / "status.docx", DOCX)
    out = {}
    for name in FORMATS:
        ext, extractor = (name.split("-") + ["docling"])[:2]
        path = root / f"status.{ext}"
        data = path.read_bytes()
        out[name] = Extractor(extractor).extract(SourceDoc(f"status.{ext}", sha256_bytes(data), ext, len(data), path))
    return out


def span(md: str, first: str, until: str | None) -> tuple[int, int]:
    """From the line that starts with ``first`` to the line that starts with ``until`` (or the end)."""
    start = re.search(rf"^{re.escape(first)}", md, re.MULTILINE).start()
    return start, (re.search(rf"^{re.escape(until)}", md, re.MULTILINE).start() if until else len(md))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("reference, first, until", [
    ("Additional status codes", "## Additional status codes", None),  # by case
    ("Additional Status Codes", "# Additional Status Codes", None),
    ("Additional status codes > Example", "### Example", None),  # by header path
    ("Additional Status Codes > Example", "## Example", "## Additional status codes"),
    # copied from the Markdown source with its anchor: there by anchor; in HTML and DOCX (no anchors) by case
    ("Additional status codes { #additional-status-codes_1 }", "## Additional status codes", None),
])
def test_duplicated_headers_resolve_on_every_format(converted, fmt, reference, first, until):
    doc = converted[fmt]
    assert resolve_section(doc, reference, "w") == span(doc.markdown, first, until)


@pytest.mark.parametrize("fmt", ["md-plain", "md-docling"])
def test_the_anchor_tells_the_examples_apart_in_markdown(converted, fmt):
    doc = converted[fmt]
    escaped = "\\_1" if fmt == "md-docling" else "_1"  # docling escapes the underscore
    assert f"\n### Example {{ #example{escaped} }}\n" in doc.markdown
    assert resolve_section(doc, "Example { #example_1 }", "w") == span(doc.markdown, "### Example", None)
    assert resolve_section(doc, "Example {#example}", "w") == span(doc.markdown, "## Example",
                                                                  "## Additional status codes")


@pytest.mark.parametrize("fmt", ["html", "docx"])
def test_where_the_format_lost_the_anchor_the_error_names_both_candidates(converted, fmt):
    heads = [line for line in converted[fmt].markdown.splitlines() if line.startswith("#")]
    assert heads == ["# Additional Status Codes", "## Example", "## Additional status codes", "### Example"]
    with pytest.raises(InputError) as exc:
        resolve_section(converted[fmt], "Example { #example_1 }", "ts.yaml: case 'ex' expect[0]")
    doc = f"status.{fmt}"
    assert str(exc.value) == (
        f"ts.yaml: case 'ex' expect[0]: section 'Example {{ #example_1 }}' matches 2 headers in '{doc}' "
        f"({doc}#Additional Status Codes > Example; {doc}#Additional Status Codes > Additional status codes > "
        "Example); write the header as it stands there (its case, its attribute list) or use a longer header-path "
        "suffix")
