"""Issue 27 end to end: ``ragrig eval`` on a corpus whose headers repeat their text (mkdocs Markdown with anchors,
the same page as HTML and DOCX) scores a test set that names each section as written, instead of exiting 2 on
the first case; a reference that is ambiguous still exits 2, with one line naming its candidates."""

from __future__ import annotations

import json

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow

MD = """# Additional Status Codes { #additional-status-codes }

Return a JSONResponse with the content and the status code you want, next to the default one.

## Additional status codes { #additional-status-codes_1 }

A path operation returns 200 by default; to send 201 Created for a new item, return the response yourself.

### Example { #example_1 }

The example upserts an item and answers 201 when it was created and 200 when it was updated.
"""
HTML = ('<html><body><h1 id="additional-status-codes">Additional Status Codes</h1><p>Return a JSONResponse with '
        'the content and the status code you want.</p><h2 id="additional-status-codes_1">Additional status codes'
        '</h2><p>A path operation returns 200 by default.</p><h3 id="example_1">Example</h3><p>An upsert answers '
        '201 or 200.</p><h2 id="note">Example</h2><p>Another example, under the title.</p></body></html>')
TESTSET = """name: status-codes
cases:
  - id: note-by-anchor
    query: "How do I send 201 Created instead of the default status code?"
    expect:
      - {doc: status.md, section: "Additional status codes { #additional-status-codes_1 }", grade: 2}
  - id: note-by-case
    query: "status code other than the default"
    expect:
      - {doc: status.html, section: "Additional status codes"}
  - id: example-by-path
    query: "upsert example with 201 and 200"
    expect:
      - {doc: status.docx, section: "Additional status codes > Example", grade: 2}
      - {doc: status.md, section: "Example { #example_1 }"}
"""


DOCX = [(1, "Additional Status Codes", "Return a JSONResponse with the status code you want."),
        (2, "Additional status codes", "A path operation returns 200 by default."),
        (3, "Example", "An upsert answers 201 or 200."),
        (2, "Example", "Another example, under the title.")]  # (heading level, heading, paragraph)


def test_eval_scores_references_told_apart_by_anchor_case_and_path(tmp_path, write_files, write_docx, make_config,
                                                                   embedder, capsys):
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    corpus = write_files(tmp_path / "corpus", {"status.md": MD, "status.html": HTML})
    write_docx(corpus / "status.docx", DOCX)
    cfg = make_config(corpus, "corpus.markdown_extractor=plain")
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().docs_failed == 0
    testset = write_files(tmp_path, {"status.yaml": TESTSET}) / "status.yaml"
    argv = ["eval", "--no-prefect"]
    for item in [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]",
                 "corpus.markdown_extractor=plain", "mlflow.enabled=false"]:
        argv += ["--set", item]
    out = tmp_path / "eval.json"
    assert main([*argv, "--testset", str(testset), "--output-json", str(out)]) == 0
    rows = {r["id"]: r["expected"] for r in json.loads(out.read_text())["per_query"]}
    assert rows == {  # normalised keys where they name one section, the text as written where they do not
        "note-by-anchor": ["status.md#Additional status codes {#additional-status-codes_1}"],
        "note-by-case": ["status.html#Additional status codes"],
        # the H1's "Additional Status Codes > Example" has the same normalised path
        "example-by-path": ["status.docx#Additional status codes > Example", "status.md#example"],
    }

    ambiguous = write_files(tmp_path, {"ambiguous.yaml": TESTSET.replace(
        "section: \"Additional status codes > Example\"", "section: \"Example\"")}) / "ambiguous.yaml"
    capsys.readouterr()
    assert main([*argv, "--testset", str(ambiguous)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {ambiguous}: case 'example-by-path' expect[0]: section 'Example' matches 2 headers in "
                   "'status.docx' (status.docx#Additional Status Codes > Additional status codes > Example; "
                   "status.docx#Additional Status Codes > Example); use a longer header-path suffix\n")
