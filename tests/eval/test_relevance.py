"""Resolving expectations to spans of the indexed documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.relevance import Target, resolve_case, resolve_section, resolve_testset
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.documents import Document

RULES = """# Core Rules

Intro text.

## Movement

### Dash

Dash text.

### Charge

Charge text.

## Shooting

### Dash

A different dash, for shooting.

## **Cover** _Saves_

Cover text.
"""


def document(doc_id: str, markdown: str) -> Document:
    return Document(doc_id=doc_id, sha256="0" * 64, format="md", markdown=markdown)


DOCS = {"core/rules.md": document("core/rules.md", RULES), "faq.md": document("faq.md", "# FAQ\n\nAnswers.\n")}


def span(start_marker: str, end_marker: str | None) -> tuple[int, int]:
    start = RULES.index(start_marker)
    return start, (RULES.index(end_marker) if end_marker else len(RULES))


def test_by_header_text():
    doc = DOCS["core/rules.md"]
    # a level-3 section ends at the next header of level <= 3
    assert resolve_section(doc, "Charge", "w") == span("### Charge", "## Shooting")
    # a level-2 section takes its subsections with it
    assert resolve_section(doc, "Movement", "w") == span("## Movement", "## Shooting")
    # the last section runs to the end of the text
    assert resolve_section(doc, "Cover Saves", "w") == span("## **Cover**", None)
    assert resolve_section(doc, "Core Rules", "w") == (0, len(RULES))


def test_by_path_suffix():
    doc = DOCS["core/rules.md"]
    assert resolve_section(doc, "Movement > Dash", "w") == span("### Dash", "### Charge")
    second_dash = RULES.index("### Dash", RULES.index("## Shooting"))
    assert resolve_section(doc, "Shooting > Dash", "w") == (second_dash, RULES.index("## **Cover**"))
    assert resolve_section(doc, "Core Rules > Shooting > Dash", "w") == (second_dash, RULES.index("## **Cover**"))


def test_case_insensitive_and_emphasis():
    doc = DOCS["core/rules.md"]
    expected = span("## **Cover**", None)
    for name in ("cover saves", "COVER SAVES", "**Cover** _Saves_", "  cover   saves ", "core rules > cover saves"):
        assert resolve_section(doc, name, "w") == expected, name


def test_no_match_is_an_error_naming_where():
    with pytest.raises(InputError) as exc:
        resolve_section(DOCS["core/rules.md"], "Melee", "sample.yaml: case 'm1' expect[0]")
    msg = str(exc.value)
    assert "sample.yaml: case 'm1' expect[0]" in msg and "'Melee'" in msg and "core/rules.md" in msg
    # a suffix must match whole titles from the end: "Movement > Charge > Dash" is no path here
    with pytest.raises(InputError, match="matches no header"):
        resolve_section(DOCS["core/rules.md"], "Charge > Dash", "w")
    with pytest.raises(InputError, match="empty section"):
        resolve_section(DOCS["core/rules.md"], " > ", "w")


def test_several_matches_is_an_error_listing_them():
    with pytest.raises(InputError) as exc:
        resolve_section(DOCS["core/rules.md"], "Dash", "ts: case 'd' expect[0]")
    msg = str(exc.value)
    assert "matches 2 headers" in msg
    assert "Core Rules > Movement > Dash" in msg and "Core Rules > Shooting > Dash" in msg
    assert "longer header-path suffix" in msg


def case(*expect: Expectation, cid: str = "c1") -> Case:
    return Case(id=cid, query="q", expect=list(expect))


def test_resolve_case_targets():
    c = case(
        Expectation(doc="core/rules.md", section="Movement > Charge", grade=2),
        Expectation(doc="faq.md"),
        Expectation(doc="core/rules.md", section="movement > CHARGE", grade=1),  # same section, lower grade
    )
    targets = resolve_case(c, DOCS, "ts.yaml")
    start, end = span("### Charge", "## Shooting")
    assert targets == [
        Target("core/rules.md#movement > charge", "core/rules.md", start, end, 2, RULES[start:end]),
        Target("faq.md", "faq.md", 0, len(DOCS["faq.md"].markdown), 1, DOCS["faq.md"].markdown),
    ]
    assert targets[0].text.startswith("### Charge") and targets[0].text.endswith("Charge text.\n\n")


def test_duplicate_expectation_keeps_the_highest_grade():
    c = case(Expectation(doc="faq.md", grade=1), Expectation(doc="faq.md", grade=3), Expectation(doc="faq.md", grade=2))
    [t] = resolve_case(c, DOCS, "ts.yaml")
    assert t.grade == 3


def test_errors_name_the_case():
    with pytest.raises(InputError) as exc:
        resolve_case(case(Expectation(doc="nope.md"), cid="lost"), DOCS, "ts.yaml")
    msg = str(exc.value)
    assert "ts.yaml: case 'lost' expect[0]" in msg and "doc 'nope.md' is not in the index" in msg
    with pytest.raises(InputError) as exc:
        resolve_case(case(Expectation(doc="faq.md"), Expectation(doc="core/rules.md", section="Dash"), cid="dd"),
                     DOCS, "ts.yaml")
    assert "ts.yaml: case 'dd' expect[1]" in str(exc.value) and "matches 2 headers" in str(exc.value)


def test_resolve_testset_uses_the_path_or_the_name():
    ts = TestSet(name="tiny", cases=[case(Expectation(doc="faq.md"), cid="a"), case(Expectation(doc="x.md"), cid="b")])
    with pytest.raises(InputError, match=r"^tiny: case 'b'"):
        resolve_testset(ts, DOCS)
    ts.path = "/some/tiny.yaml"
    with pytest.raises(InputError, match=r"^/some/tiny.yaml: case 'b'"):
        resolve_testset(ts, DOCS)
    ok = TestSet(name="ok", cases=[case(Expectation(doc="faq.md"), cid="a")])
    assert list(resolve_testset(ok, DOCS)) == ["a"]


PYDANTIC = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "pydantic-docs"


@pytest.mark.shared
@pytest.mark.skipif(not (PYDANTIC / "testset.yaml").is_file(), reason="needs ../shared/datasets/pydantic-docs")
def test_a_test_set_written_from_the_users_files_resolves_with_the_default_extractor():
    """The pydantic-docs cases copy their sections from the Markdown source (inline code, possessives,
    `{#anchor}` suffixes, inline `<a name>` tags): with the default config every one resolves to one header."""
    from ragrig.configs.load import load_config
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.ingest.discover import discover
    from ragrig.retrieval.ingest.extract import extractor_for

    cfg = load_config(overrides=[f"corpus.path={PYDANTIC / 'src'}", "retrieval.synonyms=null", "eval.testsets=[]"])
    found = discover(cfg.corpus)
    extractor = extractor_for(cfg)
    docs = {s.doc_id: extractor.extract(s) for s in found.docs}
    ts = load_testset(PYDANTIC / "testset.yaml")
    targets = resolve_testset(ts, docs)
    assert len(targets) == 60 and sum(len(t) for t in targets.values()) == 128
    assert all(t.text.lstrip().startswith("#") for ts_ in targets.values() for t in ts_)  # each a header's section
