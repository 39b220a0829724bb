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
    """bm25s' English stopwords, read from its ``stopwords.py`` alone: importing ``bm25s.stopwords`` would run
    the package's ``__init__``, which imports scipy.sparse (~0.4 s of a cold query that only reads an index)."""
    if kind == "none":
        return frozenset()
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("bm25s")  # where the package is, without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bm25s is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "stopwords.py"
    words = importlib.util.spec_from_file_location("_ragrig_bm25s_stopwords", path)
    assert words is not None and words.loader is not None
    module = importlib.util.module_from_spec(words)
    words.loader.exec_module(module)
    return frozenset(module.STOPWORDS_EN)


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
