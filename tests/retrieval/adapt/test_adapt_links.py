"""``link_context`` pairs (retrieval/adapt/links.py) from hand-made chunks: MkDocs' slugs, relative targets
resolved against the linking document, the sentence around a link (its paragraph's lines joined, every link
reduced to its text), and the links that give no pair."""

from __future__ import annotations

from ragrig.retrieval.adapt.links import contexts, link_context, slug, target_doc
from ragrig.retrieval.adapt.pairs import make_pairs
from test_adapt_pairs import chunk


def test_slugs_are_python_markdowns() -> None:
    assert slug("`RootModel` and custom root types") == "rootmodel-and-custom-root-types"
    assert slug("Strict Mode — per field") == "strict-mode-per-field"
    assert slug("Café  & crème") == "cafe-creme"


def test_targets_resolve_against_the_linking_documents_folder() -> None:
    assert target_doc("concepts/models.md", "fields.md#aliases") == ("concepts/fields.md", "aliases")
    assert target_doc("migration.md", "./concepts/models.md#generic-models") == ("concepts/models.md", "generic-models")
    assert target_doc("concepts/models.md", "../why.md") == ("why.md", "")
    assert target_doc("concepts/models.md", "#strict") == ("concepts/models.md", "strict")
    for out in ("https://docs.pydantic.dev/x.md", "mailto:a@b.c", "/abs/path.md", "../../outside.md"):
        assert target_doc("concepts/models.md", out) is None, out


def test_the_sentence_around_a_link_with_every_link_reduced_to_its_text() -> None:
    text = ("# Title\n\nModels are classes. Refer to [validating data](models.md#validating-data) for\nmore, or "
            "[aliases](#aliases). Another sentence.\n\n![img](pic) and [out](https://x.y)!")
    assert contexts(text) == [
        ("models.md#validating-data", "Refer to validating data for more, or aliases."),
        ("#aliases", "Refer to validating data for more, or aliases."),
        ("https://x.y", "[img](pic) and out!"),  # an image is no link ("!" ends a sentence); the web link is dropped later
    ]


def test_a_pair_per_link_into_another_section_of_the_corpus() -> None:
    chunks = [
        chunk("0", ["Models", "Validating data"], "Call model_validate to check a dictionary against the model.",
              doc="concepts/models.md"),
        chunk("1", ["Models", "Strict"], "Strict mode refuses coercion. See [validation](#validating-data) for "
              "the methods that take it. Also [itself](#strict) and [gone](#no-such-section) and "
              "[the web](https://example.com/page).", doc="concepts/models.md"),
        chunk("2", ["Migration"], "Version two moved the validators, as [the models page](concepts/models.md) "
              "explains in full.", doc="migration.md"),
    ]
    pairs = link_context(chunks)
    assert [(p.kind, p.anchor, p.section) for p in pairs] == [
        ("link_context", "See validation for the methods that take it.",
         ("concepts/models.md", ("Models", "Validating data"))),
        ("link_context", "Version two moved the validators, as the models page explains in full.",
         ("concepts/models.md", ("Models", "Validating data"))),  # no anchor: the document's first section
    ]
    assert pairs[0].positive == "Call model_validate to check a dictionary against the model."
    assert [p.kind for p in make_pairs(chunks, {}, ["link_context"], 0)] == ["link_context"] * 2
