"""BM25 of one piece written to its folder a range of columns at a time (issue 38: the driver's memory).

``build_in_blocks`` holds the whole CSC score matrix while it fills it: 8 bytes a posting, ~0.6 kB a chunk, the
largest part of a big ingest's peak. ``write_in_blocks`` writes the same files without it: one pass scores the
corpus a block of chunks at a time (``bm25_blocks.score_in_blocks``) and appends each posting to the spill file of
its column range (12 bytes: row, column, score), the ranges cut from the document frequencies so each holds at
most ``POSTINGS_IN_MEMORY`` postings; then each range is read back, put in column order and written after the
ranges before it. A range's postings arrive row after row, so a stable sort by column leaves each column's rows
in order: exactly the arrays ``place`` fills. The spill is removed as it is read (and on any error); the saved
files are bm25s' own, byte for byte (tested against ``build_in_blocks(...).save``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25_blocks import finish, placed, score_in_blocks
from ragrig.retrieval.index.bm25_shards import TokenIds

# per column range: its spilled postings read back (12 bytes each), their order (8) and the two arrays written
# (4 + 4): ~56 MB at 2M postings. An index of fewer postings is held whole, as build_in_blocks holds it (8 bytes).
POSTINGS_IN_MEMORY = 2_000_000
MAX_RANGES = 128  # at most about this many ranges (spill files open at once): bigger ranges past 1G postings
DATA, INDICES = "data.csc.index.npy", "indices.csc.index.npy"  # bm25s' file names (BM25.save's defaults)
POSTING = np.dtype([("row", np.int32), ("col", np.int32), ("score", np.float32)])  # a spilled posting: 12 bytes


def column_ranges(indptr: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive column ranges [lo, hi) covering every column, each holding at most ``budget`` postings (a
    single column with more is a range of its own)."""
    n, out, lo = len(indptr) - 1, [], 0
    while lo < n:
        hi = int(np.searchsorted(indptr, indptr[lo] + budget, side="right")) - 1
        hi = min(max(hi, lo + 1), n)
        out.append((lo, hi))
        lo = hi
    return out or [(0, 0)]


def write_in_blocks(corpus: TokenIds, cfg: Bm25Config, out: Path, block: int | None = None,
                    budget: int = POSTINGS_IN_MEMORY) -> None:
    """``build_in_blocks(corpus, cfg, block).save(out)``'s files, holding at most ``budget`` postings at once."""
    r, indptr, scored = score_in_blocks(corpus, cfg, block)
    ranges = column_ranges(indptr, max(budget, -(-int(indptr[-1]) // MAX_RANGES)))
    out.mkdir(parents=True, exist_ok=True)
    if len(ranges) == 1:  # held whole: no spill
        finish(r, corpus, indptr, *placed(r, indptr, scored)).save(str(out), show_progress=False, allow_pickle=False)
        return
    spill = out / ".postings"
    spill.mkdir()
    try:
        _spill(scored, ranges, spill)
        # the folder as bm25s writes it, its two big arrays empty; then those two written over, a range at a time
        # (the folder is a staged version's: a failure discards it whole)
        finish(r, corpus, indptr, np.empty(0, r.dtype), np.empty(0, r.int_dtype))
        r.save(str(out), show_progress=False, allow_pickle=False)
        total = int(indptr[-1])
        with _npy(out / DATA, r.dtype, total) as data, _npy(out / INDICES, r.int_dtype, total) as idx:
            for k in range(len(ranges)):
                postings = np.fromfile(spill / str(k), dtype=POSTING)
                (spill / str(k)).unlink()
                order = np.argsort(postings["col"], kind="stable")
                data.write(postings["score"][order])  # in the file's dtype (``_npy.write``)
                idx.write(postings["row"][order])
                del postings, order
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _spill(scored, ranges: list[tuple[int, int]], spill: Path) -> None:  # type: ignore[no-untyped-def]
    """Each posting appended to its column range's file, in the order it comes (row after row)."""
    starts = np.array([lo for lo, _ in ranges], dtype=np.int64)
    files = [open(spill / str(k), "wb") for k in range(len(ranges))]
    try:
        for scores, rows, cols in scored:
            which = np.searchsorted(starts, cols, side="right") - 1
            order = np.argsort(which, kind="stable")  # each range's postings together, still row after row
            cuts = np.searchsorted(which[order], np.arange(len(ranges) + 1))
            block = np.empty(len(order), dtype=POSTING)
            block["row"], block["col"], block["score"] = rows[order], cols[order], scores[order]
            for fh, a, b in zip(files, cuts[:-1].tolist(), cuts[1:].tolist()):
                if a < b:
                    fh.write(block[a:b].tobytes())
    finally:
        for fh in files:
            fh.close()


class _npy:
    """An .npy file of ``total`` values of ``dtype`` written in order, its header the one ``np.save`` writes."""

    def __init__(self, path: Path, dtype: np.dtype, total: int) -> None:
        self.path, self.total, self.written = path, total, 0
        self.dtype = np.dtype(dtype)
        # the header np.save writes (open_memmap writes it the same way; ``total`` > 0), then the values after it
        m = np.lib.format.open_memmap(path, mode="w+", dtype=self.dtype, shape=(total,))
        offset = m.offset
        del m
        self.fh = open(path, "r+b")
        self.fh.seek(offset)

    def write(self, values: np.ndarray) -> None:
        out = np.ascontiguousarray(values, dtype=self.dtype)
        self.fh.write(out.data)
        self.written += out.nbytes  # the bytes written, in the file's dtype (``values`` may come in another)

    def __enter__(self) -> _npy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()
        if exc[0] is None and self.written != self.total * self.dtype.itemsize:
            raise RuntimeError(f"{self.path.name}: wrote {self.written} bytes of {self.total * self.dtype.itemsize}")
