"""The keyword library: domain terms mined from headers, used to normalise query casing.

Ingest builds a version's library (``ingest/keyword_mining.py`` counts the terms in the texts); query
time reads it through ``KeywordNormalizer``, and multi-hop mines terms from retrieved headers.

Three kinds of term, each with how often headers and texts mention it:
- ``parameterized``: a rule keyword with a value slot, from headers like "Accurate x", "Lethal x+",
  "Blast x\"", "Lethal 5+" -> term "Lethal", slot pattern ``\\d+\\+?|x\\+?``. "lethal 5+" in a
  query becomes "Lethal 5+".
- ``phrase``: a whole header title of 1-6 words ("Escaping a Grapple", "Shield Wall").
- ``part``: each side of a "TEAM - ABILITY" header ("IRON WARDEN", "SHIELD WALL").
Terms shorter than ``min_length`` characters are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

_PARAM_TITLE = re.compile(
    r"^(?P<word>[A-Za-z][A-Za-z'’-]*(?: [A-Za-z][A-Za-z'’-]*){0,2}) (?P<slot>[xX]\+?|\d+\+?)"
    r"(?P<unit>\"|”|″| inch(?:es)?)?$"
)
_TEAM_ABILITY = re.compile(r"^(?P<a>[^-–—]{3,}?)\s+[-–—]\s+(?P<b>[^-–—]{3,})$")
SLOT = r"(?:[xX]|\d+)\+?"


@dataclass
class Term:
    term: str
    kind: str  # parameterized | phrase | part
    header_count: int = 0
    text_count: int = 0

    @property
    def count(self) -> int:
        return self.header_count + self.text_count


def _clean(title: str) -> str:
    return " ".join(title.replace("\u00a0", " ").split()).strip(" :.")


def mine_terms(titles: Iterable[str], min_length: int = 4, max_words: int = 6) -> dict[str, Term]:
    """Candidate terms from header titles, keyed by their casefolded form (first casing seen wins)."""
    terms: dict[str, Term] = {}

    def add(text: str, kind: str) -> None:
        text = _clean(text)
        if len(text) < min_length or not re.search(r"[A-Za-z]", text):
            return
        key = text.casefold()
        t = terms.get(key)
        if t is None:
            terms[key] = t = Term(text, kind)
        elif kind == "parameterized" and t.kind != "parameterized":
            t.kind = kind  # the slot form is the more useful reading
        t.header_count += 1

    for raw in titles:
        title = _clean(raw)
        if not title:
            continue
        m = _PARAM_TITLE.match(title)
        if m:
            add(m.group("word"), "parameterized")
            continue
        m = _TEAM_ABILITY.match(title)
        if m:
            add(m.group("a"), "part")
            add(m.group("b"), "part")
        if len(title.split()) <= max_words:
            add(title, "phrase")
    return terms


LIBRARY_VERSION = 1


def to_library(terms: Iterable[Term], min_length: int) -> dict[str, Any]:
    """The library as a version stores it (keywords.json): terms by descending count, then alphabetically."""
    ordered = sorted(terms, key=lambda t: (-t.count, t.term.casefold()))
    return {
        "version": LIBRARY_VERSION,
        "min_length": min_length,
        "terms": [{**asdict(t), "count": t.count} for t in ordered],
    }


_WORD = re.compile(r"\w+")


def _fold(word: str) -> str:
    """``word`` casefolded as ``re.I`` matches it against ASCII: besides case, "İ" and "ı" match "i" there."""
    return word.casefold().replace("i\u0307", "i").replace("\u0131", "i")


def _word_index(terms: list[str], ids: list[int]) -> tuple[set[int], dict[str, list[int]]]:
    r"""The terms ``ids`` (places in ``terms``) under their first word, casefolded; one with no word, or with a
    character outside ASCII (where ``re.I``'s case matching and ``casefold`` could differ), under none: a
    candidate for every text. A term's first word is a whole word of any text it matches (the pattern's
    ``(?<!\w)`` before it, a non-word character or the pattern's ``(?!\w)`` after it)."""
    always: set[int] = set()
    by_word: dict[str, list[int]] = {}
    for i in ids:
        first = _WORD.search(terms[i])
        if first is None or not terms[i].isascii():
            always.add(i)
        else:
            by_word.setdefault(first.group().casefold(), []).append(i)
    return always, by_word


def _alternation(terms: list[str]) -> str:
    """The terms as a regex alternation, longest first (so a term never loses to its own prefix)."""
    return "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))


class KeywordNormalizer:
    """Rewrites query text so known terms take their library casing ("lethal 5+" -> "Lethal 5+")."""

    def __init__(self, library: dict[str, Any]) -> None:
        self.terms: list[dict[str, Any]] = list(library.get("terms", []))
        canon = {t["term"].casefold(): t["term"] for t in self.terms}
        self.canonical = canon
        self._order = [t["term"] for t in self.terms]
        ids = {"param": [i for i, t in enumerate(self.terms) if t["kind"] == "parameterized"],
               "plain": [i for i, t in enumerate(self.terms) if t["kind"] != "parameterized"]}
        self._param = self._pattern("param", [self._order[i] for i in ids["param"]]) if ids["param"] else None
        self._plain = self._pattern("plain", [self._order[i] for i in ids["plain"]]) if ids["plain"] else None
        # mentioned(): each term under its first word, by its place in the library
        self._lower = [t.lower() for t in self._order]
        self._words = {kind: _word_index(self._order, kind_ids) for kind, kind_ids in ids.items()}
        self._compiled: dict[tuple[str, tuple[int, ...]], re.Pattern[str]] = {}

    def normalize(self, query: str) -> str:
        out = query
        if self._param is not None:
            out = self._param.sub(lambda m: f"{self.canon(m.group(1))} {m.group(2).lower()}", out)
        if self._plain is not None:
            out = self._plain.sub(lambda m: self.canon(m.group(1)), out)
        return out

    def canon(self, matched: str) -> str:
        """The library's spelling of a term the patterns matched (``re.I`` also matches "ı" and "İ" to "i", which
        ``casefold`` keeps apart: "lıthal" was a KeyError)."""
        return self.canonical.get(matched.casefold()) or self.canonical.get(_fold(matched)) or matched

    def mentioned(self, text: str) -> list[str]:
        """Library terms that ``text`` mentions, in order of first mention (for multi-hop judges). The same
        matches as the whole library's patterns, found with patterns of only the terms that can match: those
        whose first word is one of ``text``'s words (``_word_index``); a library of thousands of terms scanned
        one by one at every offset of every retrieved chunk was 40 % of a multi-hop evaluation's extra time."""
        found: dict[str, int] = {}  # term -> offset of its first mention
        for rx in self._patterns(text):
            for m in rx.finditer(text):
                found.setdefault(self.canon(m.group(1)), m.start())
        return sorted(found, key=found.__getitem__)

    def _patterns(self, text: str) -> list[re.Pattern[str]]:
        folded = _fold(text)
        words = set(_WORD.findall(folded))
        out = []
        for kind, (always, by_word) in self._words.items():
            maybe = always.union(*(by_word.get(w, ()) for w in words))
            # and whose whole text is in the text's (``_fold`` keeps every match of an ASCII term a substring)
            chosen = tuple(sorted(i for i in maybe if i in always or self._lower[i] in folded))
            if chosen:
                rx = self._compiled.get((kind, chosen))
                if rx is None:
                    if len(self._compiled) >= 4096:
                        self._compiled.clear()
                    rx = self._compiled[(kind, chosen)] = self._pattern(kind, [self._order[i] for i in chosen])
                out.append(rx)
        return out

    @staticmethod
    def _pattern(kind: str, terms: list[str]) -> re.Pattern[str]:
        """The pattern of ``kind`` ("param": a term and its value slot; "plain") over ``terms``, in the library's
        order: the whole library's (``normalize``), or only the terms a text can match (``mentioned``), whose
        alternation then lists them in the same order, so at every offset the same alternative matches first."""
        alt = _alternation(terms)
        if kind == "param":
            return re.compile(r"(?<!\w)(" + alt + r")\s+(" + SLOT + r")(?!\w)", re.I)
        return re.compile(r"(?<!\w)(" + alt + r")(?!\w)", re.I)
