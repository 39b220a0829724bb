"""The keyword library: domain terms mined from headers, used to normalise query casing.

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
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

_PARAM_TITLE = re.compile(r"^(?P<word>[A-Za-z][A-Za-z'’-]*(?: [A-Za-z][A-Za-z'’-]*){0,2}) (?P<slot>[xX]\+?|\d+\+?)(?P<unit>\"|”|″| inch(?:es)?)?$")
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


_TOKEN = re.compile(r"(\w+)|(\s+|[^\w\s])")
_END = ""  # trie key marking a complete term (no token is empty)


def _tokens(text: str) -> tuple[list[str], list[bool]]:
    """Words, whitespace runs and single other characters, and which of them are words."""
    pairs = _TOKEN.findall(text)
    return [w or o for w, o in pairs], [bool(w) for w, _ in pairs]


def count_in_texts(terms: dict[str, Term], texts: Iterable[str]) -> None:
    """Add to each term how many times the texts mention it (case-insensitive, whole words).

    Mentions are leftmost-longest and never overlap, as a regex alternation of the terms (longest first)
    between ``(?<!\w)`` and ``(?!\w)`` finds them; but each text is walked once, token by token, through
    a trie of the terms' tokens, so the cost grows with the text and not with text x terms (SRD 5.1:
    2,804 chunks x 1,900 terms took 6 s as one regex).
    """
    if not terms:
        return
    trie: dict[str, Any] = {}
    for key in terms:
        node = trie
        for tok in _tokens(key)[0]:
            node = node.setdefault(tok, {})
        node[_END] = key
    counts: Counter[str] = Counter()
    for text in texts:
        toks, word = _tokens(text.casefold())
        n, i = len(toks), 0
        while i < n:
            node = trie.get(toks[i])
            # a match starts where no word character precedes it: automatic for a word token
            if node is None or (i and not word[i] and word[i - 1]):
                i += 1
                continue
            best, j = None, i
            while node is not None:
                j += 1
                key = node.get(_END)
                # ... and ends where no word character follows: automatic after a word token
                if key is not None and (word[j - 1] or j == n or not word[j]):
                    best, best_end = key, j
                node = node.get(toks[j]) if j < n else None
            if best is None:
                i += 1
            else:
                counts[best] += 1
                i = best_end
    for k, c in counts.items():
        terms[k].text_count += c


def build_library(titles: Iterable[str], texts: Iterable[str], min_length: int = 4) -> dict[str, Any]:
    terms = mine_terms(titles, min_length=min_length)
    count_in_texts(terms, texts)
    ordered = sorted(terms.values(), key=lambda t: (-t.count, t.term.casefold()))
    return {
        "version": 1,
        "min_length": min_length,
        "terms": [{**asdict(t), "count": t.count} for t in ordered],
    }


class KeywordNormalizer:
    """Rewrites query text so known terms take their library casing ("lethal 5+" -> "Lethal 5+")."""

    def __init__(self, library: dict[str, Any]) -> None:
        self.terms: list[dict[str, Any]] = list(library.get("terms", []))
        canon = {t["term"].casefold(): t["term"] for t in self.terms}
        self.canonical = canon
        params = [t["term"] for t in self.terms if t["kind"] == "parameterized"]
        plain = [t["term"] for t in self.terms if t["kind"] != "parameterized"]
        self._param = (
            re.compile(r"(?<!\w)(" + "|".join(re.escape(p) for p in sorted(params, key=len, reverse=True)) + r")\s+(" + SLOT + r")(?!\w)", re.I)
            if params
            else None
        )
        self._plain = (
            re.compile(r"(?<!\w)(" + "|".join(re.escape(p) for p in sorted(plain, key=len, reverse=True)) + r")(?!\w)", re.I)
            if plain
            else None
        )

    def normalize(self, query: str) -> str:
        out = query
        if self._param is not None:
            out = self._param.sub(lambda m: f"{self.canonical[m.group(1).casefold()]} {m.group(2).lower()}", out)
        if self._plain is not None:
            out = self._plain.sub(lambda m: self.canonical.get(m.group(1).casefold(), m.group(1)), out)
        return out

    def mentioned(self, text: str) -> list[str]:
        """Library terms that ``text`` mentions, in order of first mention (for multi-hop judges)."""
        found: dict[str, int] = {}  # term -> offset of its first mention
        for rx in (self._param, self._plain):
            if rx is None:
                continue
            for m in rx.finditer(text):
                found.setdefault(self.canonical[m.group(1).casefold()], m.start())
        return sorted(found, key=found.__getitem__)
