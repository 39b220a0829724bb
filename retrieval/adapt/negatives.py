"""Hard negatives mined with BM25 (``embedding.adapt.hard_negatives``): for each pair, the best-scoring chunks of
the version for its anchor that belong to another section, as that chunk's body. Deterministic: BM25 scores,
ties in chunk order (``bm25.top_k``), and a top-up from a place fixed by the anchor's text."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from ragrig.retrieval.adapt.pairs import Pair, body
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.index.bm25 import Bm25Index

Search = Callable[[str, int], list[int]]
"""``search(text, k)``: the indexes of the k best chunks for ``text``, best first."""

OVERFETCH = 4  # candidates looked at per negative wanted (a section's own pieces and empty bodies are skipped)


def _fallback(anchor: str, size: int) -> Iterator[int]:
    """Every chunk index once, from a start fixed by the anchor's text (deterministic, spread over the corpus)."""
    start = zlib.crc32(anchor.encode("utf-8")) % size if size else 0
    return (i % size for i in range(start, start + size))


def mine(pairs: Sequence[Pair], chunks: Sequence[Chunk], search: Search, n: int) -> list[Pair]:
    """``pairs`` with ``n`` negatives each: BM25's best chunks of other sections for the anchor, topped up (when
    BM25 finds fewer: an anchor whose words the corpus barely has) by other sections' chunks from a place fixed
    by the anchor; a pair still short (a corpus of fewer sections) is dropped, so every row has the same columns
    (the trainer's triplet / n-tuple format)."""
    if n <= 0:
        return list(pairs)
    out = []
    for p in pairs:
        negs: list[str] = []
        for i in itertools.chain(search(p.anchor, n * OVERFETCH + 1), _fallback(p.anchor, len(chunks))):
            c = chunks[i]
            text = body(c)
            if (c.doc_id, tuple(c.header_path)) == p.section or not text or text == p.positive or text in negs:
                continue
            negs.append(text)
            if len(negs) == n:
                break
        if len(negs) == n:
            out.append(replace(p, negatives=tuple(negs)))
    return out


def bm25_search(index: Bm25Index) -> Search:
    """A ``Search`` over a version's own BM25 index (rows are the version's chunks, in order)."""
    def search(text: str, k: int) -> list[int]:
        return [i for i, _ in index.search(index.tokenizer(text), k)]
    return search
