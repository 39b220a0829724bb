"""Training pairs from hand-made chunks: each kind's anchors and positives computed by hand, deduplication,
sampling by seed, hard negatives from other sections only."""

from __future__ import annotations

from ragrig.retrieval.adapt import negatives
from ragrig.retrieval.adapt.pairs import (body, cloze, counts, header_body, keyword_section, make_pairs,
                                          parent_child, sample, sentences)
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.ingest.chunking import make_search_text


def chunk(cid: str, path: list[str], text: str, part: int = 0, doc: str = "rules.md") -> Chunk:
    search = make_search_text(path, text)
    return Chunk(chunk_id=f"{doc}#{cid}", doc_id=doc, header_path=path, level=len(path), start=0, end=len(text),
                 text=text, search_text=search, sha256=cid, tokens=0, part=part)


COMBAT = chunk("0", ["Combat"], "Fights happen in rounds. Each round lasts six seconds. Everyone acts once.")
GRAPPLE = chunk("1", ["Combat", "Grappling"], "A grappled creature cannot move. It may try to escape as an action.")
ESCAPE = chunk("2", ["Combat", "Grappling", "Escaping a Grapple"], "Roll Athletics against the grappler's check.")
LETHAL = chunk("3", ["Weapon Rules", "Lethal x+"], "Critical hits happen on x or better. Lethal 5+ means five.")
EMPTY = chunk("4", ["Combat", "Notes"], "")
SHORT = chunk("5", ["Combat", "Tiny"], "Too short")


def test_body_drops_the_header_path_line() -> None:
    assert body(GRAPPLE) == "A grappled creature cannot move. It may try to escape as an action."
    assert body(EMPTY) == ""


def test_header_body_is_parent_and_title_to_body() -> None:
    pairs = header_body([COMBAT, GRAPPLE, ESCAPE, EMPTY, SHORT])
    assert [(p.anchor, p.positive) for p in pairs] == [
        ("Combat", "Fights happen in rounds. Each round lasts six seconds. Everyone acts once."),
        ("Combat > Grappling", "A grappled creature cannot move. It may try to escape as an action."),
        ("Grappling > Escaping a Grapple", "Roll Athletics against the grappler's check."),
    ]  # the empty and the two-word bodies teach nothing
    assert pairs[2].section == ("rules.md", ("Combat", "Grappling", "Escaping a Grapple"))


def test_sentences_and_cloze_take_one_sentence_out() -> None:
    text = body(COMBAT)
    assert [text[s:e] for s, e in sentences(text)] == [
        "Fights happen in rounds.", " Each round lasts six seconds.", " Everyone acts once."]
    [p] = cloze([COMBAT, GRAPPLE], seed=0)  # GRAPPLE has two sentences: one to ask is not enough to find it in
    assert p.kind == "cloze" and p.anchor in {"Fights happen in rounds.", "Each round lasts six seconds."} | {
        "Everyone acts once."}
    assert p.anchor not in p.positive
    rest = {"Fights happen in rounds.": "Each round lasts six seconds. Everyone acts once.",
            "Each round lasts six seconds.": "Fights happen in rounds. Everyone acts once.",
            "Everyone acts once.": "Fights happen in rounds. Each round lasts six seconds."}
    assert p.positive == rest[p.anchor]
    assert cloze([COMBAT], seed=0) == cloze([COMBAT], seed=0)  # the seed picks the sentence: same seed, same pair
    picked = {cloze([COMBAT], seed=s)[0].anchor for s in range(20)}
    assert len(picked) > 1  # and another seed may pick another


def test_keyword_section_finds_the_defining_header() -> None:
    library = {"terms": [{"term": "Lethal", "kind": "parameterized"}, {"term": "Grappling", "kind": "phrase"},
                         {"term": "Nowhere", "kind": "phrase"}]}
    pairs = keyword_section([GRAPPLE, LETHAL], library)
    assert [(p.anchor, p.section[1][-1]) for p in pairs] == [("Lethal", "Lethal x+"), ("Grappling", "Grappling")]


def test_keyword_section_skips_a_term_that_names_many_sections() -> None:
    many = [chunk(str(i), [f"Part {i}", "Overview"], "Some words to read here.") for i in range(4)]
    assert keyword_section(many, {"terms": [{"term": "Overview", "kind": "phrase"}]}) == []


def test_parent_child_is_parent_path_to_titled_child() -> None:
    pairs = parent_child([COMBAT, GRAPPLE, ESCAPE])
    assert [(p.anchor, p.positive) for p in pairs] == [
        ("Combat", "Grappling\nA grappled creature cannot move. It may try to escape as an action."),
        ("Combat > Grappling", "Escaping a Grapple\nRoll Athletics against the grappler's check."),
    ]


def test_later_pieces_of_a_split_section_are_not_parents_children_or_definitions() -> None:
    piece2 = chunk("9", ["Combat", "Grappling"], "More about grappling rules in a second piece.", part=2)
    assert parent_child([piece2]) == []
    assert keyword_section([piece2], {"terms": [{"term": "Grappling", "kind": "phrase"}]}) == []
    assert len(header_body([piece2])) == 1  # its body is still what the section's title finds


def test_make_pairs_orders_by_kind_and_drops_repeats() -> None:
    library = {"terms": [{"term": "Combat", "kind": "phrase"}]}
    pairs = make_pairs([COMBAT, GRAPPLE], library, ["header_body", "keyword_section", "cloze"], seed=0)
    # keyword_section's ("Combat" -> COMBAT's body) repeats header_body's first pair: dropped
    assert [p.kind for p in pairs] == ["header_body", "header_body", "cloze"]
    assert counts(pairs) == {"header_body": 2, "cloze": 1, "keyword_section": 0, "parent_child": 0}


def test_sample_is_seeded_and_keeps_order() -> None:
    pairs = make_pairs([COMBAT, GRAPPLE, ESCAPE, LETHAL], {}, ["header_body", "parent_child"], seed=0)
    assert len(pairs) == 7  # 4 header_body + 3 parent_child (every chunk but COMBAT has a parent)
    a, b = sample(pairs, 3, seed=1), sample(pairs, 3, seed=1)
    assert a == b and len(a) == 3
    assert [pairs.index(p) for p in a] == sorted(pairs.index(p) for p in a)
    assert any(sample(pairs, 3, seed=s) != a for s in range(2, 10))
    assert sample(pairs, None, 0) == pairs and sample(pairs, 10, 0) == pairs


def test_hard_negatives_come_from_other_sections() -> None:
    chunks = [COMBAT, GRAPPLE, ESCAPE, LETHAL]
    pairs = header_body(chunks)

    def search(text: str, k: int) -> list[int]:  # a fixed ranking: every chunk, in order
        return list(range(len(chunks)))[:k]

    mined = negatives.mine(pairs, chunks, search, 2)
    by_anchor = {p.anchor: p.negatives for p in mined}
    assert by_anchor["Combat"] == (body(GRAPPLE), body(ESCAPE))  # its own section (index 0) skipped
    assert by_anchor["Combat > Grappling"] == (body(COMBAT), body(ESCAPE))
    assert negatives.mine(pairs, chunks, search, 0) == pairs
    topped = negatives.mine(pairs, chunks, lambda t, k: [], 3)  # BM25 found nothing: other sections top it up
    assert [len(p.negatives) for p in topped] == [3] * len(pairs)
    assert all(p.positive not in p.negatives for p in topped)
    assert negatives.mine(pairs, chunks, lambda t, k: [], 3) == topped  # from a place fixed by the anchor
    assert negatives.mine(pairs, chunks, search, 4) == []  # 4 sections: 3 others at most, every pair dropped


def test_hard_negatives_from_the_versions_bm25() -> None:
    from ragrig.configs.models import Bm25Config
    from ragrig.retrieval.index.bm25 import Bm25Index

    chunks = [COMBAT, GRAPPLE, ESCAPE, LETHAL]
    index = Bm25Index.build([c.search_text for c in chunks], Bm25Config())
    [p] = negatives.mine([header_body(chunks)[2]], chunks, negatives.bm25_search(index), 1)
    assert p.anchor == "Grappling > Escaping a Grapple"
    assert p.negatives == (body(GRAPPLE),)  # the best BM25 match outside its own section
