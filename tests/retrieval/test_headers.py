"""Fuzzy header lookup over hand-built chunks: thresholds, mentions inside a query, over-used titles."""

from __future__ import annotations

import pytest
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.headers import HeaderIndex


def chunk(cid: str, doc: str, path: list[str], level: int | None = None, part: int = 0) -> Chunk:
    text = f"{'#' * (level or len(path))} {path[-1] if path else ''}\n\nbody of {cid}\n"
    return Chunk(
        chunk_id=cid, doc_id=doc, header_path=path, level=len(path) if level is None else level, start=0,
        end=len(text), text=text, search_text=text, sha256="0" * 64, tokens=0, part=part,
    )


CHUNKS = [
    chunk("w#0", "weapons.md", ["Weapon Rules"]),  # row 0
    chunk("w#1", "weapons.md", ["Weapon Rules", "Lethal x+"]),  # row 1
    chunk("w#2", "weapons.md", ["Weapon Rules", "Piercing x"]),  # row 2
    chunk("w#3", "weapons.md", ["Weapon Rules", "Accurate x"]),  # row 3
    chunk("c#0", "core.md", ["Core", "Escaping a Grapple"]),  # row 4
    chunk("c#1", "core.md", ["Core", "Escaping a Grapple"], part=2),  # row 5: second piece, not its own header
    chunk("t#0", "teams/a.md", ["Iron Wardens", "Shield Wall"], part=1),  # row 6: first piece counts
    chunk("t#1", "teams/b.md", ["Ash Runners", "Shield Wall"]),  # row 7
    chunk("n#0", "notes.md", [], level=0),  # row 8: text before any header
    chunk("m#0", "m1.md", ["Mission 1", "Victory Points"]),  # rows 9-12: a title heading 4 sections
    chunk("m#1", "m2.md", ["Mission 2", "Victory Points"]),
    chunk("m#2", "m3.md", ["Mission 3", "Victory Points"]),
    chunk("m#3", "m4.md", ["Mission 4", "Victory Points"]),
    chunk("e#0", "e1.md", ["E1", "Engage"]),  # rows 13-15: exactly 3 sections is still allowed
    chunk("e#1", "e2.md", ["E2", "Engage"]),
    chunk("e#2", "e3.md", ["E3", "Engage"]),
    chunk("x#0", "x.md", ["X", "Go"]),  # row 16: key shorter than 3 characters
]


@pytest.fixture(scope="module")
def index() -> HeaderIndex:
    return HeaderIndex(CHUNKS)


def test_which_titles_are_indexed(index):
    # a chunk's own title is the last header of its path. Left out: "Victory Points" (heads 4 sections),
    # "Go" (shorter than 3 characters), the level-0 chunk, the part-2 piece (its title is already there).
    assert len(index) == 7
    everything = index.lookup("zzz", threshold=0.0, limit=50)
    assert sorted(m.title for m in everything) == [
        "Accurate x", "Engage", "Escaping a Grapple", "Lethal x+", "Piercing x", "Shield Wall", "Weapon Rules",
    ]
    assert all(8 not in m.rows and 5 not in m.rows and 16 not in m.rows for m in everything)


def test_lookup_exact(index):
    [m] = index.lookup("Lethal x+")
    assert (m.title, m.score, m.rows) == ("Lethal x+", 1.0, (1,))
    # case, emphasis and extra spaces are normalised away
    [m] = index.lookup("  **LETHAL**   X+ ")
    assert (m.title, m.score) == ("Lethal x+", 1.0)


def test_lookup_small_typo(index):
    [m] = index.lookup("Letal x+")
    # compared as word tokens ("+" is not a word): indel ratio of "letal x" (7) vs "lethal x" (8): 2 * 7 / 15
    assert m.title == "Lethal x+" and m.score == pytest.approx(14 / 15)


def test_lookup_below_threshold_finds_nothing(index):
    # "pierce" vs "piercing x": common subsequence "pierc" -> 2 * 5 / 16 = 0.625 < 0.85
    assert index.lookup("Pierce") == []
    assert index.lookup("Pierce", threshold=0.6)[0].title == "Piercing x"
    # "lethal" vs "lethal x" (titles compare as word tokens): 2 * 6 / 14 = 0.857 -> above 0.85, below 0.9
    assert index.lookup("Lethal", threshold=0.9) == []
    assert index.lookup("Lethal")[0].score == pytest.approx(12 / 14)
    assert index.lookup("") == []


def test_lookup_rows_of_a_title_used_in_several_sections(index):
    [m] = index.lookup("Shield Wall")
    assert m.rows == (6, 7)  # the part-1 piece and the whole section, not the part-2 piece
    [m] = index.lookup("Escaping a Grapple")
    assert m.rows == (4,)
    [m] = index.lookup("Engage")
    assert m.rows == (13, 14, 15)


def test_titles_heading_more_than_three_sections_are_ignored(index):
    assert index.lookup("Victory Points") == []
    assert index.mentions("how do I score victory points") == []
    strict = HeaderIndex(CHUNKS, max_sections_per_title=2)
    assert strict.lookup("Engage") == [] and strict.lookup("Shield Wall")[0].rows == (6, 7)


def test_max_words_limit():
    long_title = "One Two Three Four Five Six Seven Eight Nine Ten Eleven"
    idx = HeaderIndex([chunk("l#0", "l.md", ["Doc", long_title])])
    assert len(idx) == 0 and idx.lookup(long_title) == []
    assert len(HeaderIndex([chunk("l#0", "l.md", ["Doc", long_title])], max_words=11)) == 1


def test_mentions_finds_parameterised_titles_inside_a_query(index):
    found = index.mentions("Does lethal x+ stack with piercing x?")
    assert [(m.title, m.score) for m in found] == [("Piercing x", 1.0), ("Lethal x+", 1.0)]  # equal score: longer first
    assert found[1].rows == (1,)


def test_mentions_finds_multi_word_titles_and_near_misses(index):
    [m] = index.mentions("how does escaping a grapple work")
    assert (m.title, m.score, m.rows) == ("Escaping a Grapple", 1.0, (4,))
    [m] = index.mentions("can I use lethl x+ here")
    assert m.title == "Lethal x+" and m.score == pytest.approx(14 / 15)  # "lethl x" vs "lethal x"
    assert index.mentions("how far can I move") == []
