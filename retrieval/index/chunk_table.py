"""A version's chunks as a reader holds them (issue 38): each row parsed from ``chunks.jsonl`` when it is asked for
(never every row held as a Python object), beside the per-version structures queries need, which ingest derives
once and writes in ``reader/`` (``reader_files.py``): the chunk-id order, each row's de-duplication keys and
document, the header and term indexes. A version written before them opens as before: every row parsed, the
same structures derived in memory by the same ``derive``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, overload

import numpy as np
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.json_loads import loads
from ragrig.retrieval.multihop.terms import TermIndex

ROW_CACHE = 8192  # parsed rows kept (a query reads its candidates' rows more than once)
READ_BLOCK = 1 << 20  # bytes read at a time when every row is read in order


def text_digest(text: str) -> str:
    """What makes two chunk texts the same hit: their words, case folded."""
    return hashlib.sha1(" ".join(text.split()).casefold().encode()).hexdigest()


def dedup_key(chunk: Chunk, digest: str | None = None) -> tuple[Hashable, ...]:
    """Two hits are duplicates when their text is identical, or they are pieces of the same section.
    ``digest``: the text's ``text_digest``, when the chunk at hand no longer holds its text."""
    text_key = ("text", text_digest(chunk.text) if digest is None else digest)
    if chunk.part:
        return (text_key, ("section", chunk.doc_id, tuple(chunk.header_path), chunk.level))
    return (text_key,)


@dataclass
class Derived:
    """What queries need of every row, made once per version: ``order`` (the rows in chunk-id order), ``codes``
    (n x 3: the row's de-duplication text key, its section key or -1 for a whole section, its document; each a
    number given in row order of first appearance), ``docs`` (the document ids the third column numbers),
    ``headers`` and ``terms`` (``TermIndex``'s rows: term -> chunk ids, sorted)."""

    order: np.ndarray
    codes: np.ndarray
    docs: list[str]
    headers: HeaderIndex
    terms: dict[str, list[str]]


def derive(chunks: Sequence[Chunk], library: dict[str, Any], digests: Sequence[str] | None = None) -> Derived:
    """``digests``: each row's ``text_digest`` (rows without their texts: ``ingest/tables.slim``)."""
    ids = [c.chunk_id for c in chunks]
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    text: dict[Hashable, int] = {}
    section: dict[Hashable, int] = {}
    docs: dict[str, int] = {}
    codes = np.empty((len(chunks), 3), dtype=np.int64)
    for row, c in enumerate(chunks):
        key = dedup_key(c, None if digests is None else digests[row])
        codes[row] = (text.setdefault(key[0], len(text)),
                      section.setdefault(key[1], len(section)) if len(key) > 1 else -1,
                      docs.setdefault(c.doc_id, len(docs)))
    terms = TermIndex(library, chunks).rows
    return Derived(order, codes, list(docs), HeaderIndex(chunks), {t: sorted(ids) for t, ids in terms.items()})


class LazyRows:
    """Rows of ``chunks.jsonl`` by number: ``offsets[i]:offsets[i + 1]`` is row i's line, read with ``pread``
    (just its bytes: a memory map's fault reads megabytes around a row, ~3 ms a row from a cold cache against
    ~15 µs, and counts them in the reader's RSS)."""

    def __init__(self, path: Path, offsets: np.ndarray, damaged: Callable[[str], Exception]) -> None:
        self.path, self.offsets, self.damaged = path, offsets, damaged
        self.fd = os.open(path, os.O_RDONLY)
        self.get = lru_cache(maxsize=ROW_CACHE)(self._parse)

    def __del__(self) -> None:
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)

    def __getitem__(self, row: int) -> Chunk:
        return self.get(row)

    def _parse(self, row: int) -> Chunk:
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        return self.parse(os.pread(self.fd, end - start, start), row)

    def parse(self, line: bytes, row: int) -> Chunk:
        try:
            return Chunk.from_dict(loads(line))
        except (ValueError, KeyError, TypeError) as exc:
            raise self.damaged(f"chunks.jsonl row {row} is unreadable ({type(exc).__name__})") from None

    def __iter__(self) -> Iterator[Chunk]:
        """Every row once, in order, read straight through ``READ_BLOCK`` bytes at a time (not through the cache),
        from the open file: an ingest reads a staging folder's rows while the folder is renamed under it."""
        ends, n, row = self.offsets, len(self.offsets) - 1, 0
        while row < n:
            last = max(row + 1, int(np.searchsorted(ends, ends[row] + READ_BLOCK, side="right")) - 1)
            start = int(ends[row])
            block = os.pread(self.fd, int(ends[last]) - start, start)
            for r in range(row, last):
                if int(ends[r + 1]) - start > len(block):
                    raise self.damaged(f"chunks.jsonl ends after {r} of its {n} rows")
                yield self.parse(block[int(ends[r]) - start:int(ends[r + 1]) - start], r)
            row = last


class RowSequence(Sequence[Chunk]):
    """Chunk rows by number, as a list gives them (negative numbers, slices as lists, ``IndexError`` past the
    end): a subclass gives ``__len__`` and ``_row(i)`` for ``0 <= i < len(self)``."""

    def _row(self, i: int) -> Chunk:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        n = len(self)
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(n))]
        i = int(i)
        if not -n <= i < n:
            raise IndexError(f"chunk row {i} out of range ({n} rows)")
        return self._row(i % n)


class ChunkTable(RowSequence):
    """The rows of a version (``table[i]``: a Chunk) and its ``Derived`` structures. ``rows``: a list (a
    version without ``reader/``: every row parsed) or the lazy rows of ``chunks.jsonl``."""

    def __init__(self, rows: list[Chunk] | LazyRows, derived: Derived, ids: Callable[[int], str]) -> None:
        self._rows, self.derived, self._id = rows, derived, ids
        self._n = len(derived.order)

    @classmethod
    def of(cls, chunks: list[Chunk], library: dict[str, Any]) -> ChunkTable:
        """A table over rows already in memory (a version written before ``reader/``; tests)."""
        return cls(chunks, derive(chunks, library), lambda row: chunks[row].chunk_id)

    @classmethod
    def lazy(cls, path: Path, offsets: np.ndarray, derived: Derived, ids: Callable[[int], str],
             damaged: Callable[[str], Exception]) -> ChunkTable:
        return cls(LazyRows(path, offsets, damaged), derived, ids)

    def __len__(self) -> int:
        return self._n

    def _row(self, i: int) -> Chunk:
        return self._rows[i]

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self._rows)

    @property
    def lazy_rows(self) -> bool:
        return not isinstance(self._rows, list)

    def chunk_id(self, row: int) -> str:
        return self._id(row)

    @property
    def rows_by_id(self) -> RowsById:
        return RowsById(self)

    def doc_rows(self, doc_id: str) -> list[int]:
        """The rows of document ``doc_id``, in row order."""
        codes, by_doc, starts = self._doc_index
        code = codes.get(doc_id)
        return [] if code is None else by_doc[starts[code]:starts[code + 1]].tolist()

    @cached_property
    def _doc_index(self) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        """Each document's number, the rows sorted by document (stably) and where each document's rows start."""
        doc = self.derived.codes[:, 2]
        by_doc = np.argsort(doc, kind="stable")
        starts = np.searchsorted(doc[by_doc], np.arange(len(self.derived.docs) + 1))
        return {d: i for i, d in enumerate(self.derived.docs)}, by_doc, starts


class RowsById(Mapping[str, int]):
    """Chunk id -> row, by binary search over the stored chunk-id order (no dict of every id)."""

    def __init__(self, table: ChunkTable) -> None:
        self.table, self.order = table, table.derived.order

    def _find(self, chunk_id: str) -> int | None:
        lo, hi = 0, len(self.order)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.table.chunk_id(int(self.order[mid])) < chunk_id:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.order) and self.table.chunk_id(int(self.order[lo])) == chunk_id:
            return int(self.order[lo])
        return None

    def __getitem__(self, chunk_id: str) -> int:
        row = self._find(chunk_id) if isinstance(chunk_id, str) else None
        if row is None:
            raise KeyError(chunk_id)
        return row

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self._find(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        return (self.table.chunk_id(i) for i in range(len(self.table)))

    def __len__(self) -> int:
        return len(self.table)
