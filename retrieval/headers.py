"""Fuzzy lookup of section headers: "which chunk is the rule called X?" (rapidfuzz, threshold 0..1)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.markdown import normalize_header
from rapidfuzz import fuzz, process

_WORDS = re.compile(r"[^\W_]+(?:[+'’][^\W_]*)?", re.UNICODE)


@dataclass(frozen=True)
class HeaderMatch:
    title: str  # the header as written
    score: float  # 0..1 similarity
    rows: tuple[int, ...]  # chunk rows whose own header this is (first piece of each section)


class HeaderIndex:
    def __init__(self, chunks: Sequence[Chunk], max_sections_per_title: int = 3, max_words: int = 10) -> None:
        rows: dict[str, list[int]] = defaultdict(list)
        shown: dict[str, str] = {}
        for i, c in enumerate(chunks):
            if not c.header_path or c.part > 1 or c.level == 0:
                continue
            title = c.header_path[-1]
            key = normalize_header(title)
            if len(key) < 3 or len(key.split()) > max_words:
                continue
            rows[key].append(i)
            shown.setdefault(key, title)
        # a title that heads many sections ("Victory Points") names none of them
        self._set({k: tuple(v) for k, v in rows.items() if len(v) <= max_sections_per_title}, shown)

    def _set(self, rows: dict[str, tuple[int, ...]], shown: dict[str, str]) -> None:
        self._rows = rows
        self._shown = shown
        self._keys = list(self._rows)
        self._by_len: dict[int, list[str]] = defaultdict(list)
        for k in self._keys:
            self._by_len[len(k.split())].append(k)

    def state(self) -> dict[str, list]:
        """What the index holds, as JSON (a version's ``reader/headers.json``): its keys in order, each key's
        title as written and its rows."""
        return {"keys": self._keys, "shown": [self._shown[k] for k in self._keys],
                "rows": [list(self._rows[k]) for k in self._keys]}

    @classmethod
    def from_state(cls, state: dict[str, list], n_rows: int) -> HeaderIndex:
        """The index ``state()`` described (rows below ``n_rows``); ValueError when it is not one."""
        keys, shown, rows = state.get("keys"), state.get("shown"), state.get("rows")
        if not (isinstance(keys, list) and isinstance(shown, list) and isinstance(rows, list)
                and len(keys) == len(shown) == len(rows) and all(isinstance(k, str) for k in keys + shown)
                and all(isinstance(r, list) and r and all(type(x) is int and 0 <= x < n_rows for x in r)
                        for r in rows)):
            raise ValueError("reader/headers.json is not a header index of this table")
        index = cls.__new__(cls)
        index._set({k: tuple(r) for k, r in zip(keys, rows)}, dict(zip(keys, shown)))
        return index

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self, name: str, threshold: float = 0.85, limit: int = 5) -> list[HeaderMatch]:
        """Headers similar to ``name`` (normalised ratio >= threshold), best first."""
        key = normalize_header(name)
        if not key or not self._keys:
            return []
        hits = process.extract(key, self._keys, scorer=fuzz.ratio, score_cutoff=threshold * 100, limit=limit)
        out = [HeaderMatch(self._shown[k], s / 100.0, self._rows[k]) for k, s, _ in hits]
        return sorted(out, key=lambda m: (-m.score, -len(m.title), m.title))

    def mentions(self, query: str, threshold: float = 0.85, limit: int = 10) -> list[HeaderMatch]:
        """Headers the query names, exactly or nearly (word n-grams of the query vs titles of that length)."""
        words = normalize_header(query).split()  # the titles' own normal form: word tokens
        best: dict[str, float] = {}
        for n, keys in self._by_len.items():
            if n > len(words):
                continue
            for i in range(len(words) - n + 1):
                gram = " ".join(words[i : i + n])
                if len(gram) < 4:
                    continue
                hit = process.extractOne(gram, keys, scorer=fuzz.ratio, score_cutoff=threshold * 100)
                if hit is not None:
                    k, s = hit[0], hit[1] / 100.0
                    best[k] = max(best.get(k, 0.0), s)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[:limit]
        return [HeaderMatch(self._shown[k], s, self._rows[k]) for k, s in ranked]
