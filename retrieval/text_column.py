"""A column of strings stored as one UTF-8 blob and the byte offset where each ends (``blob[ends[i]:ends[i + 1]]``
is string i): written and read as two files, each string decoded when it is read, none held as a Python object
until then (a version's chunk ids and header titles: ``index/reader_files.py``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def encode(strings: Sequence[str]) -> tuple[bytes, np.ndarray]:
    """(the blob, int64 offsets: 0, then where each string ends)."""
    parts = [s.encode("utf-8") for s in strings]
    return b"".join(parts), np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)


def offsets_fit(ends: np.ndarray, total: int, min_gap: int = 0) -> bool:
    """Whether ``ends`` (0, then where each piece ends) cut ``total`` units into pieces of ``min_gap`` or more: a
    text column's offsets, a table's line starts, a header's rows."""
    return (ends.ndim == 1 and len(ends) > 0 and ends[0] == 0 and int(ends[-1]) == total
            and (len(ends) < 2 or int(np.diff(ends).min()) >= min_gap))


class TextColumn(Sequence[str]):
    def __init__(self, blob: bytes, ends: np.ndarray) -> None:
        """``ends``: as ``encode`` makes them; ValueError when they do not fit ``blob``."""
        if not offsets_fit(ends, len(blob)):
            raise ValueError("the offsets do not fit the blob")
        self.blob, self._ends = blob, ends.tolist()

    def __len__(self) -> int:
        return len(self._ends) - 1

    def __getitem__(self, i):  # type: ignore[override]
        if not 0 <= i < len(self._ends) - 1:
            raise IndexError(i)
        return self.blob[self._ends[i]:self._ends[i + 1]].decode("utf-8")
