"""Fuzzy lookup of section headers: "which chunk is the rule called X?" (rapidfuzz, threshold 0..1)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.markdown import normalize_header
from ragrig.retrieval.text_column import offsets_fit
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
        kept = [k for k, v in rows.items() if len(v) <= max_sections_per_title]
        flat = [r for k in kept for r in rows[k]]
        ptr = np.cumsum([0] + [len(rows[k]) for k in kept], dtype=np.int64)
        self._set(kept, [shown[k] for k in kept], np.array(flat, dtype=np.int64), ptr)

    def _set(self, keys: list[str], shown: Sequence[str], flat: np.ndarray, ptr: np.ndarray) -> None:
        """Key i (a normalised title) is written ``shown[i]`` and heads rows ``flat[ptr[i]:ptr[i + 1]]``."""
        self._keys, self._shown, self._flat, self._ptr = keys, shown, flat, ptr
        self._lengths: dict[int, tuple[list[str], list[int]]] | None = None

    def _rows(self, i: int) -> tuple[int, ...]:
        return tuple(self._flat[self._ptr[i]:self._ptr[i + 1]].tolist())

    @property
    def _by_len(self) -> dict[int, tuple[list[str], list[int]]]:
        """Keys by their number of words (each with its place among all keys), made on first use."""
        if self._lengths is None:
            by_len: dict[int, tuple[list[str], list[int]]] = {}
            for i, k in enumerate(self._keys):
                keys, places = by_len.setdefault(len(k.split()), ([], []))
                keys.append(k)
                places.append(i)
            self._lengths = by_len
        return self._lengths

    def state(self) -> tuple[list[str], Sequence[str], np.ndarray, np.ndarray]:
        """What the index holds (a version's ``reader/``): its keys in order, each key's title as written, and
        its rows as ``flat[ptr[i]:ptr[i + 1]]``."""
        return self._keys, self._shown, self._flat, self._ptr

    @classmethod
    def from_state(cls, keys: list[str], shown: Sequence[str], flat: np.ndarray, ptr: np.ndarray,
                   n_rows: int) -> HeaderIndex:
        """The index ``state()`` described (rows below ``n_rows``); ValueError when it is not one."""
        if len(keys) != len(shown) or not set(map(type, keys)) <= {str}:
            raise ValueError("reader/headers.txt does not fit reader/header_titles.npy")
        if (flat.ndim != 1 or len(ptr) != len(keys) + 1 or not offsets_fit(ptr, len(flat), min_gap=1)
                or (len(flat) and (flat.min() < 0 or flat.max() >= n_rows))):
            raise ValueError("reader/header_rows.npy does not fit reader/headers.txt and the table")
        index = cls.__new__(cls)
        index._set(keys, shown, flat, ptr)
        return index

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self, name: str, threshold: float = 0.85, limit: int = 5) -> list[HeaderMatch]:
        """Headers similar to ``name`` (normalised ratio >= threshold), best first."""
        key = normalize_header(name)
        if not key or not self._keys:
            return []
        hits = process.extract(key, self._keys, scorer=fuzz.ratio, score_cutoff=threshold * 100, limit=limit)
        out = [HeaderMatch(self._shown[i], s / 100.0, self._rows(i)) for _, s, i in hits]
        return sorted(out, key=lambda m: (-m.score, -len(m.title), m.title))

    def mentions(self, query: str, threshold: float = 0.85, limit: int = 10) -> list[HeaderMatch]:
        """Headers the query names, exactly or nearly (word n-grams of the query vs titles of that length)."""
        words = normalize_header(query).split()  # the titles' own normal form: word tokens
        best: dict[int, float] = {}
        for n, (keys, places) in self._by_len.items():
            if n > len(words):
                continue
            for i in range(len(words) - n + 1):
                gram = " ".join(words[i : i + n])
                if len(gram) < 4:
                    continue
                hit = process.extractOne(gram, keys, scorer=fuzz.ratio, score_cutoff=threshold * 100)
                if hit is not None:
                    k, s = places[hit[2]], hit[1] / 100.0
                    best[k] = max(best.get(k, 0.0), s)
        keys = self._keys
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], -len(keys[kv[0]]), keys[kv[0]]))[:limit]
        return [HeaderMatch(self._shown[i], s, self._rows(i)) for i, s in ranked]
