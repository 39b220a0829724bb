"""The one matching order for section references (issue 27): as written (attribute list and case included), then
by header path, then normalised. mkdocs repeats a header's text at two levels and tells them apart by anchor
and case; a reference copied with either names one section. Spans are located by hand from the header lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.lifecycle.fingerprints import section_evidence
from ragrig.eval.relevance import Target, name_section, resolve_case, resolve_section, resolve_testset
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.documents import Document
from ragrig.retrieval.markdown import sections

# FastAPI's "Additional Status Codes" page as mkdocs renders its source: the H1 and an H2 share their words
MKDOCS = """# Additional Status Codes { #additional-status-codes }

Return a JSONResponse to send an additional status code.

## Example { #example }

The example under the page title.

## Additional status codes { #additional-status-codes_1 }

The note on codes other than the default.

### Example { #example_1 }

The example under the note.

## Variant {#variant-json}

The JSON variant.

## Variant {#variant-yaml}

The YAML variant.
"""


def at(line: str) -> int:
    return MKDOCS.index(line + "\n")


H1 = (0, len(MKDOCS))
H1_EXAMPLE = (at("## Example { #example }"), at("## Additional status codes { #additional-status-codes_1 }"))
H2 = (at("## Additional status codes { #additional-status-codes_1 }"), at("## Variant {#variant-json}"))
H3_EXAMPLE = (at("### Example { #example_1 }"), at("## Variant {#variant-json}"))
JSON = (at("## Variant {#variant-json}"), at("## Variant {#variant-yaml}"))
YAML = (at("## Variant {#variant-yaml}"), len(MKDOCS))
DOC = Document(doc_id="status.md", sha256="0" * 64, format="md", markdown=MKDOCS)


@pytest.mark.parametrize("reference, expected", [
    # by anchor: copied with the attribute list (its inner spacing does not count)
    ("Additional status codes { #additional-status-codes_1 }", H2),
    ("Additional status codes {#additional-status-codes_1}", H2),
    ("Additional Status Codes { #additional-status-codes }", H1),
    ("Example { #example_1 }", H3_EXAMPLE),
    ("Variant {#variant-yaml}", YAML),
    ("Variant { #variant-json }", JSON),
    # by case: the text as written, without its attribute list
    ("Additional status codes", H2),
    ("Additional Status Codes", H1),
    # by header path: the parents as written pick one of the two "Example"s
    ("Additional status codes > Example", H3_EXAMPLE),
    ("Additional Status Codes > Example", H1_EXAMPLE),
    # by header path, parents loosely written: the leaf as written with its anchor decides
    ("additional status codes > Example { #example_1 }", H3_EXAMPLE),
])
def test_duplicated_header_text_resolves_to_the_section_the_author_wrote(reference, expected):
    assert resolve_section(DOC, reference, "w") == expected


def test_an_ambiguous_reference_is_one_line_naming_file_case_reference_and_every_candidate():
    ts = TestSet(name="status", cases=[Case(id="status-example", query="q", expect=[
        Expectation(doc="status.md", section="Additional status codes"),
        Expectation(doc="status.md", section="example")])])
    ts.path = "testsets/status.yaml"
    with pytest.raises(InputError) as exc:
        resolve_testset(ts, {"status.md": DOC})
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("testsets/status.yaml: case 'status-example' expect[1]: section 'example' matches 2 "
                          "headers in 'status.md' (")
    assert ("status.md#Additional Status Codes {#additional-status-codes} > Example {#example}; "
            "status.md#Additional Status Codes {#additional-status-codes} > Additional status codes "
            "{#additional-status-codes_1} > Example {#example_1})") in msg
    assert msg.endswith("write the header as it stands there (its case, its attribute list) or use a longer "
                        "header-path suffix")


def test_two_sections_whose_normalised_text_is_one_stay_two_targets_of_a_case():
    c = Case(id="both", query="q", expect=[Expectation(doc="status.md", section="Variant {#variant-json}", grade=2),
                                           Expectation(doc="status.md", section="Variant {#variant-yaml}")])
    got = resolve_case(c, {"status.md": DOC}, "ts.yaml")
    assert got == [Target("status.md#Variant {#variant-json}", "status.md", *JSON, 2, MKDOCS[JSON[0]:JSON[1]]),
                   Target("status.md#Variant {#variant-yaml}", "status.md", *YAML, 1, MKDOCS[YAML[0]:YAML[1]])]


def test_a_header_with_an_inline_html_anchor_is_one_part_not_a_path():
    md = ('# Types\n\n### Implementing `__get_pydantic_core_schema__` <a name="core_schema"></a>\n\nHook text.\n\n'
          '### Implementing hooks\n\nOther text.\n')
    doc = Document(doc_id="types.md", sha256="0" * 64, format="md", markdown=md)
    ref = 'Implementing `__get_pydantic_core_schema__` <a name="core_schema"></a>'
    expected = (md.index("### Implementing `"), md.index("### Implementing hooks"))
    assert resolve_section(doc, ref, "w") == resolve_section(doc, f"Types > {ref}", "w") == expected


def test_names_for_sections_resolve_to_them_alone_keeping_the_anchor_only_where_needed():
    ev = {s.start: section_evidence(DOC, s) for s in sections(MKDOCS)}
    assert name_section(DOC, ev[YAML[0]]) == "Variant {#variant-yaml}"  # no plain suffix names it alone
    assert name_section(DOC, ev[JSON[0]], "Variant") == "Variant {#variant-json}"
    assert name_section(DOC, ev[H2[0]]) == "Additional status codes"  # its case tells it from the H1
    assert name_section(DOC, ev[H3_EXAMPLE[0]]) == "Additional status codes > Example"  # plain text before anchors


PYDANTIC = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "pydantic-docs"


@pytest.mark.shared
@pytest.mark.skipif(not (PYDANTIC / "src" / "contributing.md").is_file(), reason="needs ../shared/datasets")
def test_the_pydantic_docs_headers_that_differ_only_by_case_resolve_by_case():
    """contributing.md has "## Documentation style" and, inside it, "### Documentation Style"."""
    md = (PYDANTIC / "src" / "contributing.md").read_text(encoding="utf-8")
    doc = Document(doc_id="contributing.md", sha256="0" * 64, format="md", markdown=md)
    h2 = resolve_section(doc, "Documentation style", "w")
    h3 = resolve_section(doc, "Documentation Style", "w")
    assert h2 == (md.index("## Documentation style\n"), md.index("## Debugging Python and Rust\n"))
    assert h3 == (md.index("### Documentation Style\n"), h2[1])  # the H3 closes its H2
