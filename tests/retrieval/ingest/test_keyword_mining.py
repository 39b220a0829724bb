"""Ingest's keyword mining: mentions of the mined terms counted in texts, and the library a version stores."""

from __future__ import annotations

from ragrig.retrieval.ingest.keyword_mining import build_library, count_in_texts
from ragrig.retrieval.keywords import mine_terms

TITLES = ["Accurate x", "Lethal x+", 'Blast 2"', "IRON WARDEN - SHIELD WALL", "Escaping a Grapple", "AP"]


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
             "rule", "of", "three", "three.", "(ac)s", "(AC)_", "spell", "slots", "spells", "d20", "test.", "test..",
             "dash", "action", "_dash", "dash_", "—", "Spell\nSlots", "spell  slots"]
    terms = mine_terms(titles)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 25))).replace(" -", "-")
             for _ in range(400)]
    texts += ["Your Armor Class (AC) rises.", "armor class (ac)s", "x(optional) rule; (Optional) Rule of three",
              "a half-elf's half-elfish"]
    count_in_texts(terms, texts)
    expected = _regex_counts(list(terms), texts)
    assert {k: t.text_count for k, t in terms.items()} == expected
    assert sum(expected.values()) > 300  # the texts do mention the terms, in many combinations
    assert expected["half-elf"] and expected["armor class (ac)"] and expected["(optional) rule"]
