"""The keyword library as query time reads it: terms mined from header titles, the stored format, and query
casing normalisation (ingest's counting of mentions: tests/retrieval/ingest/test_keyword_mining.py)."""

from __future__ import annotations

import pytest
from ragrig.retrieval.keywords import KeywordNormalizer, Term, mine_terms, to_library

TITLES = ["Accurate x", "Lethal x+", 'Blast 2"', "IRON WARDEN - SHIELD WALL", "Escaping a Grapple", "AP"]


def test_mine_terms_kinds_and_counts():
    terms = mine_terms(TITLES)
    assert terms == {
        "accurate": Term("Accurate", "parameterized", 1, 0),
        "lethal": Term("Lethal", "parameterized", 1, 0),
        "blast": Term("Blast", "parameterized", 1, 0),
        "iron warden": Term("IRON WARDEN", "part", 1, 0),
        "shield wall": Term("SHIELD WALL", "part", 1, 0),
        "iron warden - shield wall": Term("IRON WARDEN - SHIELD WALL", "phrase", 1, 0),
        "escaping a grapple": Term("Escaping a Grapple", "phrase", 1, 0),
    }
    assert "ap" not in terms  # shorter than min_length=4


def test_mine_terms_repeats_and_first_casing_wins():
    terms = mine_terms(["Lethal x+", "lethal 5+", "Shield Wall", "IRON WARDEN - SHIELD WALL", "Torrent 2 inches"])
    assert terms["lethal"] == Term("Lethal", "parameterized", 2, 0)
    # seen first as a phrase ("Shield Wall"), then as a part: casing and kind of the first sighting
    assert terms["shield wall"] == Term("Shield Wall", "phrase", 2, 0)
    assert terms["torrent"].kind == "parameterized"


def test_a_slot_title_upgrades_a_phrase_to_parameterized():
    terms = mine_terms(["Piercing", "Piercing 1"])
    assert terms == {"piercing": Term("Piercing", "parameterized", 2, 0)}


def test_mine_terms_limits():
    # min_length, max_words, and titles without letters
    terms = mine_terms(["Move", "One two three four five six seven", "12345", "  Spaced   Out :  "], min_length=5)
    assert set(terms) == {"spaced out"}
    assert terms["spaced out"].term == "Spaced Out"


def test_the_library_format_orders_terms_by_count_then_name():
    terms = [Term("beta", "phrase", 1, 0), Term("Lethal", "parameterized", 1, 2), Term("Alpha", "part", 0, 1)]
    assert to_library(terms, 5) == {
        "version": 1,
        "min_length": 5,
        "terms": [
            {"term": "Lethal", "kind": "parameterized", "header_count": 1, "text_count": 2, "count": 3},
            {"term": "Alpha", "kind": "part", "header_count": 0, "text_count": 1, "count": 1},
            {"term": "beta", "kind": "phrase", "header_count": 1, "text_count": 0, "count": 1},
        ],
    }


@pytest.fixture
def normalizer() -> KeywordNormalizer:
    return KeywordNormalizer(to_library(mine_terms(TITLES).values(), 4))


@pytest.mark.parametrize(
    "query, expected",
    [
        ("accurate 1", "Accurate 1"),
        ("Accurate 1", "Accurate 1"),
        ("ACCURATE 1", "Accurate 1"),
        ("lethal 5+", "Lethal 5+"),
        ("what does LETHAL X+ do", "what does Lethal x+ do"),
        ("blast 3 vs blast x", "Blast 3 vs Blast x"),
        ("escaping a grapple", "Escaping a Grapple"),
        ("iron warden - shield wall", "IRON WARDEN - SHIELD WALL"),
        ("does shield wall stack", "does SHIELD WALL stack"),
        # a parameterized term only with its slot; not inside words; not with a non-slot suffix
        ("accurate weapons", "accurate weapons"),
        ("inaccurate 1", "inaccurate 1"),
        ("accurate 1d", "accurate 1d"),
        ("ap 2", "ap 2"),
    ],
)
def test_normalize(normalizer, query, expected):
    assert normalizer.normalize(query) == expected


def test_empty_library_changes_nothing():
    n = KeywordNormalizer({"terms": []})
    assert n.normalize("lethal 5+") == "lethal 5+"
    assert n.mentioned("lethal 5+") == []


def test_mentioned_in_order_of_first_mention(normalizer):
    text = "Escaping a grapple with accurate 2 and lethal 5+, then accurate 1 again; shield wall."
    assert normalizer.mentioned(text) == ["Escaping a Grapple", "Accurate", "Lethal", "SHIELD WALL"]
    assert normalizer.mentioned("Lethal 5+ before escaping a grapple") == ["Lethal", "Escaping a Grapple"]
    assert normalizer.mentioned("nothing relevant here, not even lethal") == []


def _whole_library_scan(n: KeywordNormalizer, text: str) -> list[str]:
    """What mentioned() found before it narrowed the patterns: the whole library's two patterns over the text."""
    found: dict[str, int] = {}
    for rx in (n._param, n._plain):
        for m in rx.finditer(text) if rx is not None else ():
            found.setdefault(n.canon(m.group(1)), m.start())
    return sorted(found, key=found.__getitem__)


def test_mentioned_finds_what_the_whole_librarys_patterns_find():
    """Only the terms whose first word and whole text are in the text are tried, so a library of thousands is
    not scanned at every offset; the matches are the same, including where re.I and casefold differ."""
    terms = ["Shield", "Shield Wall", "Shield-Bash", "AP", "Hunter's Mark", "x-ray vision", "Lithal", "Kelvin",
             "straße", "Café", "+1 weapon", "5th level", "_under", "Lethal"]
    library = {"terms": [{"term": t, "kind": "parameterized" if t == "Lethal" else "phrase"} for t in terms]}
    n = KeywordNormalizer(library)
    texts = [
        "A shield wall holds; a shield alone, a SHIELD-bash, and shield walls (not a term).",
        "ap rounds and AP, hunter's mark, hunter’s mark, x-ray vision, xray vision",
        "lıthal (dotless i), LİTHAL (dotted I), \u212aelvin (the Kelvin sign), ſhield (long s)",
        "STRASSE or straße or STRAẞE; café, CAFÉ, cafe; +1 weapon and a+1 weapon; 5th level; a_under _under",
        "lethal 5+ and Lethal x+ and lethal5+, lethal",
        "",
    ]
    for text in texts:
        assert n.mentioned(text) == _whole_library_scan(n, text), text
    assert n.mentioned(texts[0]) == ["Shield Wall", "Shield", "Shield-Bash"]
    assert n.mentioned(texts[2]) == ["Lithal", "Kelvin", "Shield"]  # re.I's own case matches are kept
    assert n.normalize("lıthal and lethal 5+") == "Lithal and Lethal 5+"  # was a KeyError: casefold keeps "ı"
