"""Query processing: validation, keyword-library normalisation, synonym expansion, comparison detection."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import MAX_HOPS_MAX, TOP_K_MAX, RetrievalConfig
from ragrig.configs.yamlio import load_yaml
from ragrig.retrieval.keywords import KeywordNormalizer


def check_depth(top_ks: Sequence[int], max_hops: Sequence[int | None] | None, n: int) -> None:
    """top_k and max_hops of a search of ``n`` queries within the config schema's bounds, or an InputError saying
    which value is wrong."""
    if len(top_ks) != n:
        raise InputError(f"top_k has {len(top_ks)} values for {n} queries")
    for k in top_ks:
        if not isinstance(k, int) or not 1 <= k <= TOP_K_MAX:
            raise InputError(f"top_k must be an integer from 1 to {TOP_K_MAX} (got {k!r})")
    for h in max_hops or []:
        if h is not None and (not isinstance(h, int) or not 0 <= h <= MAX_HOPS_MAX):
            raise InputError(f"max_hops must be an integer from 0 to {MAX_HOPS_MAX} (got {h!r})")


def processing_key(r: RetrievalConfig) -> tuple[Any, ...]:
    """The retrieval settings query processing depends on."""
    return (r.normalise, r.expansion, r.synonyms, r.max_query_chars)


def validate_query(query: object, max_chars: int = 2000) -> str:
    """A usable query string, or an InputError saying what is wrong with it."""
    if not isinstance(query, str):
        raise InputError(f"query must be text, got {type(query).__name__}")
    for i, ch in enumerate(query):
        if ch in "\t\n\r":
            continue
        # ZWNJ and ZWJ (U+200C, U+200D) are letters' business in Persian, Arabic and Indic scripts: kept
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") and ch not in "\u200c\u200d":
            raise InputError(f"query has a control/invalid character U+{ord(ch):04X} at position {i}")
    q = " ".join(query.split())
    if not q:
        raise InputError("query is empty")
    if len(q) > max_chars:
        raise InputError(f"query is {len(q)} characters long; the limit is retrieval.max_query_chars={max_chars}")
    return q


Synonyms = dict[str, list[str]]


def load_synonyms(path: str | Path | None) -> Synonyms:
    """``official term: [user word, …]`` YAML -> mapping; every problem names the file and line."""
    if not path:
        return {}
    located = load_yaml(path)
    data = located.data or {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: synonyms must be a mapping 'official term: [user words…]'")
    out: Synonyms = {}
    for term, words in data.items():
        where = located.where((term,))
        if not isinstance(term, str) or not term.strip():
            raise InputError(f"{where}: synonym key must be a non-empty string (got {term!r})")
        if isinstance(words, str):
            words = [words]
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise InputError(f"{where}: '{term}' must map to a list of non-empty strings (got {words!r})")
        out[term.strip()] = [w.strip() for w in words]
    return out


_END = r"[?.!]*$"
_COMPARISON = [
    re.compile(r"^(?:what(?:'s| is| are)\s+)?(?:the\s+)?differences?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)" + _END, re.I),
    re.compile(r"^(?:how\s+(?:does|do|is|are)\s+)?compare\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)" + _END,
               re.I),
    re.compile(r"^(?:how\s+(?:does|do)\s+)?(?P<a>.+?)\s+compare\s+(?:to|with)\s+(?P<b>.+?)" + _END, re.I),
    re.compile(r"^(?:how|in\s+what\s+ways?)\s+(?:do|does|did)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+differ\b.*$", re.I),
    re.compile(r"^(?:how\s+(?:is|are|does|do)\s+)?(?P<a>.+?)\s+(?:different|differs?)\s+from\s+(?P<b>.+?)" + _END, re.I),
    re.compile(r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)" + _END, re.I),
]
# "X or Y: what's the difference?", "Torrent vs Blast - what's the difference", "what's the difference: X or Y"
_DIFFERENCE = r"(?:what(?:'s| is| are)\s+)?(?:the\s+)?(?:main\s+|real\s+)?differences?"
_TRAILING = re.compile(r"^(?P<body>.+?)\s*[-–—:;,(]\s*" + _DIFFERENCE + r"\)?" + _END, re.I)
_LEADING = re.compile(r"^" + _DIFFERENCE + r"\s*[-–—:;,]\s*(?P<body>.+?)" + _END, re.I)
_PAIR = re.compile(r"^(?P<a>.+?)\s+(?:or|and|vs\.?|versus)\s+(?P<b>.+?)" + _END, re.I)
_LEAD = re.compile(r"^(?:the|a|an|using|use|rule|rules)\s+", re.I)


def _clean_entity(text: str) -> str:
    text = text.strip(" \t\"'“”‘’`,.;:?!()")
    prev = None
    while prev != text:
        prev, text = text, _LEAD.sub("", text)
    return text.strip()


def _entities(a: str, b: str) -> list[str] | None:
    parts = [p for p in re.split(r"\s*,\s*", a) if p] + [b]
    ents = [e for e in (_clean_entity(p) for p in parts) if e]
    return ents if len(ents) >= 2 else None


def detect_comparison(query: str) -> list[str] | None:
    """Entities of a comparison query, else None: "X vs Y", "compare X and Y", "difference between X and Y",
    "how do X and Y differ", "how is X different from Y", and a pair ("X or Y", "X and Y", "X vs Y") before or
    after a "what's the difference" clause. "compare A, B and C" yields three entities; a clause is never taken
    for an entity ("Torrent - what's the difference" compares nothing)."""
    q = query.strip()
    clause = _TRAILING.match(q) or _LEADING.match(q)
    if clause:
        body = clause.group("body").strip()
        for rx in (*_COMPARISON, _PAIR):
            m = rx.match(body)
            if m:
                return _entities(m.group("a"), m.group("b"))
        return None
    for rx in _COMPARISON:
        m = rx.match(q)
        if m:
            ents = _entities(m.group("a"), m.group("b"))
            if ents:
                return ents
    return None


@dataclass
class ProcessedQuery:
    raw: str
    text: str  # validated and normalised: what the embedding model and header lookup see
    bm25_text: str  # text plus synonym expansions: what BM25 sees
    expansions: list[str] = field(default_factory=list)
    comparison: list[str] | None = None


class QueryProcessor:
    def __init__(
        self,
        keywords: dict | None = None,
        synonyms: Synonyms | None = None,
        *,
        normalise: bool = True,
        expansion: bool = True,
        max_chars: int = 2000,
    ) -> None:
        self.normalizer = KeywordNormalizer(keywords or {"terms": []})
        self.normalise = normalise
        self.expansion = expansion
        self.max_chars = max_chars
        self._syn: list[tuple[re.Pattern[str], str]] = []
        self._named = {term: re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)", re.I) for term in (synonyms or {})}
        for term, words in (synonyms or {}).items():
            for w in sorted(set(words), key=len, reverse=True):
                self._syn.append((re.compile(r"(?<!\w)" + re.escape(w) + r"(?!\w)", re.I), term))

    def expand(self, text: str) -> list[str]:
        """Official terms whose user words the text uses (and that it does not already name, as whole words:
        "redeploy" does not name "ploy")."""
        found: list[str] = []
        for rx, term in self._syn:
            if term not in found and rx.search(text) and not self._named[term].search(text):
                found.append(term)
        return found

    def process(self, query: object) -> ProcessedQuery:
        q = validate_query(query, self.max_chars)
        text = self.normalizer.normalize(q) if self.normalise else q
        expansions = self.expand(text) if self.expansion else []
        bm25_text = " ".join([text, *expansions])
        return ProcessedQuery(raw=q, text=text, bm25_text=bm25_text, expansions=expansions, comparison=detect_comparison(text))


class QueryProcessors:
    """An index's query processors, one per combination of the settings processing depends on."""

    def __init__(self, keywords: dict | None) -> None:
        self.keywords = keywords
        self.made: dict[tuple[Any, ...], QueryProcessor] = {}

    def get(self, r: RetrievalConfig) -> QueryProcessor:
        key = processing_key(r)
        if key not in self.made:
            self.made[key] = QueryProcessor(self.keywords, load_synonyms(r.synonyms), normalise=r.normalise,
                                            expansion=r.expansion, max_chars=r.max_query_chars)
        return self.made[key]
