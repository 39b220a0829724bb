"""BM25 over chunk search text (header path + body), on bm25s sparse matrices; in shards with the same
rankings above ``index.bm25.shard_max_chunks`` chunks (``bm25_shards.py``).

Chosen over rank-bm25 by measurement (benchmarks/bm25_engines.py): bm25s precomputes
per-term document scores into a CSC matrix, so a query is a sum of a few sparse
columns instead of a Python loop over every document. Persisted with bm25s' own
numpy/JSON format; read back by ``bm25_read.SavedBm25`` (``allow_pickle=False``), which scores as bm25s does
without importing it (bm25s imports scipy.sparse: ~0.4 s of every cold reader).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25_blocks import build_in_blocks
from ragrig.retrieval.index.bm25_read import SavedBm25
from ragrig.retrieval.index.bm25_spill import write_in_blocks
from ragrig.retrieval.index.bm25_shards import (
    SHARDS_FILE,
    TermStats,
    TokenIds,
    build_shard,
    read_contents,
    shard_bounds,
    shard_count,
    shard_dir,
    write_contents,
)
from ragrig.retrieval.tokenize import Tokenizer


def tokenizer_for(cfg: Bm25Config) -> Tokenizer:
    return Tokenizer(stopwords=cfg.stopwords, stemmer=cfg.stemmer)


EMPTY = "empty.json"  # the whole BM25 folder of a version with no chunks (bm25s cannot index an empty corpus)


class Bm25Index:
    """One bm25s retriever, or several over consecutive rows (``bm25_shards``): ``parts`` holds (first row,
    retriever) pairs; a query is scored part by part and merged into the ranking one retriever would give."""

    def __init__(self, parts: list[tuple[int, Any]], cfg: Bm25Config, size: int = 0) -> None:
        self.parts = parts  # []: an index of no documents
        self.cfg = cfg
        self.tokenizer = tokenizer_for(cfg)
        self.size = size if parts else 0
        self.stats: TermStats | None = None  # the corpus-wide statistics of a sharded index

    @classmethod
    def build(cls, texts: Sequence[str], cfg: Bm25Config) -> Bm25Index:
        if not texts:
            return cls([], cfg)
        tok = tokenizer_for(cfg)
        shards = shard_count(cfg, len(texts))
        if shards > 1:
            stats, parts = _shards(texts, cfg, shards)
            out = cls(list(parts), cfg, len(texts))
            out.stats = stats
            return out
        corpus = TokenIds(tok(t) or [""] for t in texts)  # numbered as the shards number theirs: the same files
        return cls([(0, build_in_blocks(corpus, cfg))], cfg, len(texts))  # bm25s' index, a block at a time

    @staticmethod
    def write(texts: Sequence[str], cfg: Bm25Config, path: Path) -> None:
        """``build(texts, cfg).save(path)``'s files, holding less (an ingest's build): the score matrix of an index
        of one piece a range of columns at a time (``bm25_spill``), a sharded index's shards one at a time."""
        shards = shard_count(cfg, len(texts)) if texts else 0
        if shards == 1:  # the token ids in a file beside the index while it is built, the score matrix in ranges
            tok = tokenizer_for(cfg)
            path.mkdir(parents=True, exist_ok=True)
            ids = path / ".token-ids"
            try:
                write_in_blocks(TokenIds((tok(t) or [""] for t in texts), spill=ids), cfg, path)
            finally:
                ids.unlink(missing_ok=True)
        elif shards > 1:
            stats, parts = _shards(texts, cfg, shards)
            _save_shards(path, parts, shard_bounds(len(texts), shards), stats)
        else:
            Bm25Index.build(texts, cfg).save(path)

    def save(self, path: Path) -> None:
        if not self.parts:
            path.mkdir(parents=True, exist_ok=True)
            (path / EMPTY).write_text(json.dumps({"num_docs": 0}) + "\n")
        elif self.stats is None:
            self.parts[0][1].save(str(path), show_progress=False, allow_pickle=False)
        else:
            _save_shards(path, self.parts, self.bounds, self.stats)

    @classmethod
    def load(cls, path: Path, cfg: Bm25Config, mmap: bool = False) -> Bm25Index:
        if (path / EMPTY).is_file():
            return cls([], cfg)
        contents = read_contents(path)
        if contents is None:
            r = SavedBm25(path, mmap=mmap)
            return cls([(0, r)], cfg, int(r.scores["num_docs"]))
        shards, stats = contents
        parts = []
        for name, a, b in shards:
            r = SavedBm25(path / name, mmap=mmap)
            if int(r.scores["num_docs"]) != b - a:
                raise ValueError(f"{name} holds {r.scores['num_docs']} documents, {SHARDS_FILE} says {b - a}")
            parts.append((a, r))
        out = cls(parts, cfg, stats.num_docs)
        out.stats = stats
        return out

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """The rows of each part: [start, end)."""
        starts = [a for a, _ in self.parts]
        return list(zip(starts, [*starts[1:], self.size]))

    def scores(self, tokens: Sequence[str], mask: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every document for the query tokens (unknown tokens score nothing)."""
        if not self.parts:
            return np.zeros(0, dtype=np.float32)
        out = [_part_scores(r, tokens, b - a, None if mask is None else mask[a:b])
               for (_, r), (a, b) in zip(self.parts, self.bounds)]
        return out[0] if len(out) == 1 else np.concatenate(out)

    def search(self, tokens: Sequence[str], k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-k (row, score) with score > 0, ties broken by row order (deterministic). Shards: each shard's
        top k, then the k best of their union by (-score, row), which is the one index's top k."""
        if len(self.parts) <= 1:
            return top_k(self.scores(tokens, mask), k)
        hits: list[tuple[int, float]] = []
        for (_, r), (a, b) in zip(self.parts, self.bounds):
            sub = top_k(_part_scores(r, tokens, b - a, None if mask is None else mask[a:b]), k)
            hits.extend((a + row, score) for row, score in sub)
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]


def _shards(texts: Sequence[str], cfg: Bm25Config, shards: int) -> tuple[TermStats, Iterator[tuple[int, Any]]]:
    """The corpus-wide statistics (a pass of their own), then each shard built as it is asked for: its tokens held
    only while it is built."""
    tok = tokenizer_for(cfg)
    stats = TermStats.of(tok(t) or [""] for t in texts)
    return stats, ((a, build_shard([tok(t) or [""] for t in texts[a:b]], stats, cfg))
                   for a, b in shard_bounds(len(texts), shards))


def _save_shards(path: Path, parts: Iterable[tuple[int, Any]], bounds: Sequence[tuple[int, int]],
                 stats: TermStats) -> None:
    """A sharded index's folder: each shard saved as it comes (``Bm25Index.write`` builds them one at a time), then
    the contents file naming them."""
    path.mkdir(parents=True, exist_ok=True)
    for i, (_, r) in enumerate(parts):
        r.save(str(path / shard_dir(i)), show_progress=False, allow_pickle=False)
    write_contents(path, bounds, stats)


def _part_scores(r: Any, tokens: Sequence[str], size: int, mask: np.ndarray | None) -> np.ndarray:
    known = [t for t in tokens if t in r.vocab_dict]
    if not known:
        return np.zeros(size, dtype=np.float32)
    s = r.get_scores(known)
    if mask is not None:
        s = s * mask
    return s


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Indices of the k highest positive scores, ordered by (-score, index)."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return []
    k = min(k, n)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # include every index tied with the k-th score so the tie-break is by index, not by partition order
        kth = scores[part].min()
        cand = np.nonzero((scores >= kth) & (scores > 0))[0]
    else:
        cand = np.nonzero(scores > 0)[0]
    order = sorted(cand.tolist(), key=lambda i: (-float(scores[i]), i))[:k]
    return [(i, float(scores[i])) for i in order if scores[i] > 0]
