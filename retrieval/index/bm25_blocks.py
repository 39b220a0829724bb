"""BM25 of one piece, built a block of chunks at a time (issue 38: a driver whose memory does not grow with the
corpus faster than the index it writes).

bm25s' ``index`` scores every posting of the corpus into three COO arrays (score, row, column: 12 bytes a posting)
and then sorts them into the CSC arrays it keeps (8 bytes a posting): at 1M chunks of ~100 distinct terms, ~1.2 GB
of arrays that live only for the build. ``build_in_blocks`` makes the same retriever from the same token ids: the
statistics in one pass (document frequencies, lengths, each chunk's distinct terms), the CSC arrays made to size
from them, then bm25s' own per-document scoring (``_build_scores_and_indices_for_matrix``) over a block of
``BLOCK_DOCS`` chunks at a time, each posting placed at its column's next free slot (``bm25_shards.place``, as
``counting_csc`` places them). The numbers are computed by the same functions, document by document, in the same
order: the saved files are bm25s' own, byte for byte, for every method (tested).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25_shards import TokenIds, bm25s_module, idf_of, place

BLOCK_DOCS = 16_384  # chunks scored at once: ~20 MB of COO arrays at ~100 distinct terms a chunk


def build_in_blocks(corpus: TokenIds, cfg: Bm25Config, block: int | None = None) -> Any:
    """The bm25s retriever ``BM25(...).index(corpus)`` makes (``corpus``: every chunk's term ids, at least one
    each), without the whole corpus's COO arrays; ``block``: chunks scored at once (``BLOCK_DOCS``)."""
    r, indptr, scored = score_in_blocks(corpus, cfg, block)
    return finish(r, corpus, indptr, *placed(r, indptr, scored))


def placed(r: Any, indptr: np.ndarray, scored: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]],
           ) -> tuple[np.ndarray, np.ndarray]:
    """The CSC score and row arrays, made to size and filled block after block."""
    free = indptr[:-1].copy()
    data = np.empty(int(indptr[-1]), dtype=r.dtype)
    indices = np.empty(int(indptr[-1]), dtype=r.int_dtype)
    for scores, rows, cols in scored:
        place(data, indices, free, scores, rows, cols)
    return data, indices


def score_in_blocks(corpus: TokenIds, cfg: Bm25Config, block: int | None = None,
                    ) -> tuple[Any, np.ndarray, Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """A bm25s retriever with its idf (and non-occurrence array), the CSC column pointers, and bm25s' own
    per-document scoring of the corpus a block of chunks at a time: (scores, rows, columns) of every posting, row
    after row, the rows numbered in the corpus."""
    block = block or BLOCK_DOCS
    r = bm25s_module().BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    ends = corpus.ends
    n_docs, n_vocab = len(ends) - 1, len(corpus.vocab)
    df, distinct = _frequencies(corpus, n_vocab, block)
    avg = np.diff(ends).mean()  # bm25s: np.array([len(d) for d in docs]).mean()
    idf = idf_of(r, {t: int(n) for t, n in enumerate(df)}, n_docs, avg)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])

    def scored() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        from bm25s.scoring import _build_scores_and_indices_for_matrix

        for a in range(0, n_docs, block):
            b = min(a + block, n_docs)
            scores, rows, cols = _build_scores_and_indices_for_matrix(
                corpus.block(a, b), idf, avg, {0: int(distinct[a:b].sum())}, r.k1, r.b, r.delta, r.nonoccurrence_array,
                method=r.method, dtype=r.dtype, int_dtype=r.int_dtype, show_progress=False)
            rows += a  # the block's rows numbered in the corpus
            yield scores, rows, cols

    return r, indptr, scored()


def finish(r: Any, corpus: TokenIds, indptr: np.ndarray, data: np.ndarray, indices: np.ndarray) -> Any:
    """``r`` with its score matrix and vocabulary as bm25s' ``index`` leaves them."""
    r.scores = {"data": data.astype(r.dtype, copy=False), "indices": indices, "indptr": indptr,
                "num_docs": len(corpus)}
    vocab = corpus.vocab
    if "" not in vocab:  # what bm25s' index adds after scoring (its create_empty_token)
        vocab[""] = max(vocab.values()) + 1
    r.vocab_dict = vocab
    r.unique_token_ids_set = set(vocab.values())
    return r


def _frequencies(corpus: TokenIds, n_vocab: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Each term's document frequency and each chunk's number of distinct terms, a block of chunks at a time."""
    ends = corpus.ends
    df = np.zeros(n_vocab, dtype=np.int64)
    distinct = np.zeros(len(ends) - 1, dtype=np.int64)
    for a in range(0, len(ends) - 1, block):
        b = min(a + block, len(ends) - 1)
        lo, hi = int(ends[a]), int(ends[b])
        rows = np.repeat(np.arange(b - a, dtype=np.int64), np.diff(ends[a:b + 1]))
        keys = np.sort(rows * n_vocab + corpus.flat(lo, hi))  # (chunk, term) pairs, each once (a sort:
        pairs = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]  # np.unique hashes, 8x slower on these keys)
        df += np.bincount(pairs % n_vocab, minlength=n_vocab)
        distinct[a:b] = np.bincount(pairs // n_vocab, minlength=b - a)
    return df, distinct
