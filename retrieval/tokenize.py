"""Tokenisation for keyword search: lowercase word tokens, optional stopword removal and stemming.

The same function tokenises chunks at index time and queries at search time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_TOKEN = re.compile(r"[^\W_]+", flags=re.UNICODE)


@lru_cache(maxsize=4)
def _stopwords(kind: str) -> frozenset[str]:
    if kind == "none":
        return frozenset()
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=4)
def _stemmer(kind: str):  # type: ignore[no-untyped-def]
    if kind == "none":
        return None
    import Stemmer

    return Stemmer.Stemmer(kind)


class Tokenizer:
    def __init__(self, stopwords: str = "english", stemmer: str = "english") -> None:
        self.stop = _stopwords(stopwords)
        self.stemmer = _stemmer(stemmer)
        self._memo: dict[str, str] = {}

    def words(self, text: str) -> list[str]:
        """Lowercased word tokens minus stopwords, before stemming."""
        return [w for w in _TOKEN.findall(text.lower()) if w not in self.stop]

    def stem(self, word: str) -> str:
        if self.stemmer is None:
            return word
        s = self._memo.get(word)
        if s is None:
            s = self.stemmer.stemWord(word)
            if len(self._memo) < 500_000:
                self._memo[word] = s
        return s

    def __call__(self, text: str) -> list[str]:
        return [self.stem(w) for w in self.words(text)]

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self(t) for t in texts]
