"""The keyword library: terms mined from header titles, counted in texts, and query casing normalisation."""

from __future__ import annotations

import pytest
from ragrig.retrieval.keywords import KeywordNormalizer, Term, build_library, count_in_texts, mine_terms

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


def test_count_in_texts_whole_words_case_insensitive():
    terms = mine_terms(["Accurate x", "Shield Wall"])
    count_in_texts(terms, ["ACCURATE 1, accurate 2, inaccurate 3", "shield walls; Shield Wall."])
    assert terms["accurate"].text_count == 2  # "inaccurate" is not a mention
    assert terms["shield wall"].text_count == 1  # "shield walls" is not a mention
    assert terms["accurate"].count == 3


TEXTS = [
    "Accurate 1 and lethal 5+. Escaping a grapple is hard.",
    "The Iron Warden uses Shield Wall; shield wall again.",
]


def test_build_library_counts_and_order():
    lib = build_library(TITLES, TEXTS)
    assert lib["version"] == 1 and lib["min_length"] == 4
    got = [(t["term"], t["kind"], t["header_count"], t["text_count"], t["count"]) for t in lib["terms"]]
    assert got == [
        ("SHIELD WALL", "part", 1, 2, 3),
        ("Accurate", "parameterized", 1, 1, 2),
        ("Escaping a Grapple", "phrase", 1, 1, 2),
        ("IRON WARDEN", "part", 1, 1, 2),
        ("Lethal", "parameterized", 1, 1, 2),
        ("Blast", "parameterized", 1, 0, 1),
        ("IRON WARDEN - SHIELD WALL", "phrase", 1, 0, 1),
    ]


@pytest.fixture
def normalizer() -> KeywordNormalizer:
    return KeywordNormalizer(build_library(TITLES, TEXTS))


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


def _regex_counts(keys: list[str], texts: list[str]) -> dict[str, int]:
    """The definition count_in_texts implements: a longest-first alternation between word boundaries."""
    import re
    from collections import Counter

    rx = re.compile(r"(?<!\w)(" + "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)) + r")(?!\w)")
    found = Counter(m.group(1) for t in texts for m in rx.finditer(t.casefold()))
    return {k: found.get(k, 0) for k in keys}


def test_count_in_texts_equals_the_regex_definition_on_random_texts():
    import random

    rng = random.Random(7)
    # prefixes of each other, punctuation at either end, inner whitespace, terms that overlap
    titles = ["Half", "Half-Elf", "Elf", "Armor Class (AC)", "(Optional) Rule", "Rule of Three", "Three",
              "Spell Slots", "Spell", "d20 Test", "Test.", "Dash", "Dash Action"]
    words = ["half", "Half-", "-elf", "elf", "elfish", "armor", "class", "(ac)", "(AC).", "(optional)", "x(optional)",
             "rule", "of", "three", "three.", "(ac)s", "(AC)_", "spell", "slots", "spells", "d20", "test.", "test..", "dash", "action",
             "_dash", "dash_", "—", "Spell\nSlots", "spell  slots"]
    terms = mine_terms(titles)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 25))).replace(" -", "-")
             for _ in range(400)]
    texts += ["Your Armor Class (AC) rises.", "armor class (ac)s", "x(optional) rule; (Optional) Rule of three", "a half-elf's half-elfish"]
    count_in_texts(terms, texts)
    expected = _regex_counts(list(terms), texts)
    assert {k: t.text_count for k, t in terms.items()} == expected
    assert sum(expected.values()) > 300  # the texts do mention the terms, in many combinations
    assert expected["half-elf"] and expected["armor class (ac)"] and expected["(optional) rule"]
