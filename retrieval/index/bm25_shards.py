"""BM25 in shards: each shard a contiguous run of chunk rows with its own postings, all scored with the corpus-wide
term statistics (number of chunks, average length, document frequency of every term), so a query answered shard
by shard and merged ranks exactly as one index does: the same ids, the same float32 scores, ties by row
(``Bm25Index`` queries and merges; this module builds shards and reads their table of contents).

Why exact: bm25s stores each (chunk, term) score precomputed from (tf, chunk length, avgdl, df, N); a shard built
with the global avgdl, df and N stores the same float32 numbers, and a chunk's query score adds the same numbers
in the same (query-token) order. A term absent from a shard touches none of its chunks in either index. The
bm25l / bm25+ variants add a per-term constant to every chunk, so their shards keep the whole vocabulary;
the others keep only their own terms.

    bm25/shards.json        {"format": 1, "num_docs", "total_len", "shards": [{"dir", "start", "end"}]}
    bm25/shard-0000/        bm25s' own files for rows [start, end)

``TermStats`` and ``build_shard`` are apart so shards can be built apart (one worker each) once the partitions'
stats are merged; in one process (``Bm25Index.build``) the statistics take a streaming pass and each shard's
tokens are held only while it is built, so the build's peak is one shard's, not the corpus's.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from collections import Counter
from contextlib import nullcontext
from array import array
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import Bm25Config, HnswConfig

SHARDS_FILE = "shards.json"
FORMAT = 1
_NONOCCURRENCE = ("bm25l", "bm25+")


def bm25s_module():  # type: ignore[no-untyped-def]
    """bm25s, imported on first use. Its import sets its own logger to DEBUG ("Building index from tokens" on
    every build), so the level is put back to WARNING after the import, not before it.

    It is imported without numba: bm25s imports numba whenever it can (0.4 s on a quiet machine, 4 s on a
    busy one: the largest part of opening an index), but uses it only for its ``backend="numba"`` and
    ``compile()``, and ragrig builds with the numpy backend (saved in each index's params) and scores with
    ``get_scores``. numba stays importable for anything else in the process."""
    if "bm25s" not in sys.modules and "numba" not in sys.modules:
        sys.modules["numba"] = None  # type: ignore[assignment]  # makes `import numba` fail inside bm25s only
        try:
            import bm25s
        finally:
            if sys.modules.get("numba", 0) is None:
                del sys.modules["numba"]
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def shard_count(cfg: Bm25Config | HnswConfig, n_chunks: int) -> int:
    """How many shards an index of ``n_chunks`` is built in (never more shards than chunks, never zero); the
    HNSW graph is cut the same way (``index/hnsw.py``)."""
    wanted = math.ceil(n_chunks / cfg.shard_max_chunks) if cfg.shards == "auto" else cfg.shards
    return max(1, min(wanted, n_chunks))


def shard_bounds(n_chunks: int, shards: int) -> list[tuple[int, int]]:
    """Contiguous row ranges, sizes differing by at most one: 10 rows in 3 -> (0, 4), (4, 7), (7, 10)."""
    base, extra = divmod(n_chunks, shards)
    out, start = [], 0
    for i in range(shards):
        end = start + base + (1 if i < extra else 0)
        out.append((start, end))
        start = end
    return out


@dataclass
class TermStats:
    """The statistics every shard's scores depend on beyond its own chunks. Partitions' stats add up."""

    num_docs: int = 0
    total_len: int = 0
    df: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, docs: Iterable[Sequence[str]]) -> TermStats:
        st = cls()
        for toks in docs:
            st.num_docs += 1
            st.total_len += len(toks)
            st.df.update(set(toks))
        return st

    def merge(self, other: TermStats) -> TermStats:
        return TermStats(self.num_docs + other.num_docs, self.total_len + other.total_len, self.df + other.df)

    @property
    def avg_len(self) -> np.float64:
        """As bm25s computes it (``np.array(lengths).mean()``): an exact integer sum, one rounded division."""
        return np.float64(self.total_len / self.num_docs)


def numbered(docs: Sequence[Sequence[str]], terms: Sequence[str] | None = None) -> tuple[list[list[int]], dict[str, int]]:
    """Each doc's term ids and the vocabulary, the terms numbered in ``terms``' order or else by first appearance
    (bm25s' own numbering follows Python's string hashing: two builds of one corpus would write other files)."""
    vocab = {t: i for i, t in enumerate(terms if terms is not None else dict.fromkeys(t for d in docs for t in d))}
    return [[vocab[t] for t in d] for d in docs], vocab


class TokenIds:
    """Every chunk's term ids in one int32 array and where each chunk's run ends (4 bytes a token; the lists of
    token strings and of their ids that ``numbered`` makes took ~40 bytes a token, 5.3 GB of the one-piece build's
    peak at 1M chunks, docs/scale.md), the terms numbered by first appearance as ``numbered`` numbers them. bm25s
    reads it as its corpus object: ``ids`` (one chunk's list made when it is read) and ``vocab``. With ``spill`` (a
    file path) the ids go to that file as they are made, ``SPILL_TOKENS`` at a time, and are read back a block at a
    time (an ingest's BM25 build: ~0.5 kB a chunk of the driver's memory at 1M; the caller removes the file)."""

    SPILL_TOKENS = 1 << 20

    def __init__(self, docs: Iterable[Sequence[str]], spill: Path | None = None) -> None:
        self.vocab: dict[str, int] = {}
        self._flat = array("i")
        self._ends = array("q", [0])
        self._spill = spill
        vocab, n = self.vocab, 0
        with open(spill, "wb") if spill is not None else nullcontext() as fh:
            for d in docs:
                for t in d:
                    if t not in vocab:
                        vocab[t] = len(vocab)
                self._flat.extend([vocab[t] for t in d])
                n += len(d)
                self._ends.append(n)
                if fh is not None and len(self._flat) >= self.SPILL_TOKENS:
                    fh.write(self._flat.tobytes())
                    del self._flat[:]
            if fh is not None:
                fh.write(self._flat.tobytes())
                del self._flat[:]

    def __len__(self) -> int:
        return len(self._ends) - 1

    @property
    def ends(self) -> np.ndarray:
        """Where each chunk's ids end in the flat run (``ends[0] == 0``)."""
        return np.frombuffer(self._ends, dtype=np.int64)

    def flat(self, lo: int, hi: int) -> np.ndarray:
        """The flat run's ids ``lo..hi``."""
        if self._spill is None:
            return np.frombuffer(self._flat, dtype=np.int32)[lo:hi]
        return np.fromfile(self._spill, dtype=np.int32, count=hi - lo, offset=lo * 4)

    def block(self, a: int, b: int) -> list[list[int]]:
        """Chunks ``a..b``'s ids, a list each (what bm25s' per-document scoring takes), in one read."""
        ends = self._ends
        base = ends[a]
        ids = self.flat(base, ends[b]).tolist()
        return [ids[ends[i] - base : ends[i + 1] - base] for i in range(a, b)]

    @property
    def ids(self) -> _TokenIdLists:
        return _TokenIdLists(self)


class _TokenIdLists(SequenceABC):
    def __init__(self, corpus: TokenIds) -> None:
        self._corpus = corpus

    def __len__(self) -> int:
        return len(self._corpus)

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        if isinstance(i, slice):
            a, b, step = i.indices(len(self))
            return self._corpus.block(a, b) if step == 1 and a <= b else [self[j] for j in range(a, b, step)]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._corpus.block(i, i + 1)[0]

    def __iter__(self) -> Iterator[list[int]]:
        for a in range(0, len(self), 4096):
            yield from self._corpus.block(a, min(a + 4096, len(self)))


def counting_csc(data: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """bm25s' CSC builder (its ``_np_csc`` hook) with the arrays it returns, without its sort: bm25s packs a
    (column, row) key for every posting and argsorts it (16 bytes a posting beside the COO arrays and the sorted
    copies: ~1.6 kB a chunk of an ingest's peak). Its COO arrays come a document at a time, in row order, each
    column at most once a row, so each entry's place is its column's next free slot: the same arrays."""
    counts = np.bincount(cols, minlength=shape[1])
    indptr = np.zeros(shape[1] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    free = indptr[:-1].copy()
    out_data, out_rows = np.empty_like(data), np.empty_like(rows)
    place(out_data, out_rows, free, data, rows, cols)
    return out_data, out_rows, indptr


def place(out_data: np.ndarray, out_rows: np.ndarray, free: np.ndarray, data: np.ndarray, rows: np.ndarray,
          cols: np.ndarray) -> None:
    """Postings that come a row at a time, in row order, each column at most once a row, put at their columns'
    next free slots (``free``: each column's, advanced)."""
    bounds = np.flatnonzero(rows[1:] != rows[:-1]) + 1
    for a, b in zip([0, *bounds.tolist()], [*bounds.tolist(), len(rows)]):
        row_cols = cols[a:b]
        at = free[row_cols]
        out_data[at], out_rows[at] = data[a:b], rows[a:b]
        free[row_cols] += 1


def idf_of(r: Any, df: dict[int, int], n_docs: int, avg: Any) -> np.ndarray:
    """bm25s' idf array for retriever ``r`` over ``n_docs`` chunks of mean length ``avg`` with document
    frequencies ``df`` (term id -> chunks), and for bm25l / bm25+ its non-occurrence array set on ``r``: the first
    steps of bm25s' own ``index`` (order-free: each term's numbers are its own)."""
    from bm25s.scoring import _build_idf_array, _build_nonoccurrence_array, _select_idf_scorer, _select_tfc_scorer

    idf_fn = _select_idf_scorer(r.idf_method)
    r.nonoccurrence_array = None
    if r.method in _NONOCCURRENCE:
        r.nonoccurrence_array = _build_nonoccurrence_array(df, n_docs, idf_fn, _select_tfc_scorer(r.method), l_d=avg,
                                                           l_avg=avg, k1=r.k1, b=r.b, delta=r.delta, dtype=r.dtype)
    return _build_idf_array(df, n_docs, idf_fn, dtype=r.dtype)


def build_shard(docs: Sequence[Sequence[str]], stats: TermStats, cfg: Bm25Config) -> Any:
    """A bm25s retriever over ``docs`` (one shard's chunk tokens) scored with the corpus-wide ``stats``: the
    steps of bm25s' own ``index`` with the global numbers in place of the shard's."""
    r = bm25s_module().BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    from bm25s.scoring import _build_scores_and_indices_for_matrix

    r._np_csc = counting_csc
    ids, vocab = numbered(docs, list(stats.df) if cfg.method in _NONOCCURRENCE else None)
    avg = stats.avg_len
    idf = idf_of(r, {i: stats.df[t] for t, i in vocab.items()}, stats.num_docs, avg)
    sizes = Counter(t for d in ids for t in set(d))  # the arrays' length: this shard's postings
    flat, rows, cols = _build_scores_and_indices_for_matrix(
        ids, idf, avg, sizes, r.k1, r.b, r.delta, r.nonoccurrence_array, method=r.method, dtype=r.dtype,
        int_dtype=r.int_dtype, show_progress=False)
    data, indices, indptr = r._np_csc(data=flat, rows=rows, cols=cols, shape=(len(ids), len(vocab)))
    r.scores = {"data": data.astype(r.dtype, copy=False), "indices": indices, "indptr": indptr, "num_docs": len(ids)}
    r.vocab_dict = vocab
    r.unique_token_ids_set = set(vocab.values())
    return r


def shard_dir(i: int) -> str:
    return f"shard-{i:04d}"


def write_contents(path: Path, bounds: Sequence[tuple[int, int]], stats: TermStats) -> None:
    meta = {"format": FORMAT, "num_docs": stats.num_docs, "total_len": stats.total_len,
            "shards": [{"dir": shard_dir(i), "start": a, "end": b} for i, (a, b) in enumerate(bounds)]}
    (path / SHARDS_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def read_contents(path: Path) -> tuple[list[tuple[str, int, int]], TermStats] | None:
    """(dir, start, end) of each shard and the stats, or None for an index of one piece. Raises ValueError
    when the shards do not cover the rows once, in order (a damaged index, not a silent gap)."""
    if not (path / SHARDS_FILE).is_file():
        return None
    meta = json.loads((path / SHARDS_FILE).read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{SHARDS_FILE}: unknown format {meta.get('format')!r}")
    shards = [(str(e["dir"]), int(e["start"]), int(e["end"])) for e in meta["shards"]]
    ends = [0] + [b for _, _, b in shards]
    if not shards or any(a != prev or a >= b for (_, a, b), prev in zip(shards, ends)) or ends[-1] != meta["num_docs"]:
        raise ValueError(f"{SHARDS_FILE}: the shards do not cover rows 0..{meta['num_docs']} once, in order")
    return shards, TermStats(int(meta["num_docs"]), int(meta["total_len"]))
