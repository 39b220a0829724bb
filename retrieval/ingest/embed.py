"""Ingest's embedding step: vectors for chunk texts through the embedding cache, new texts in token-ordered
batches, with cache writes along the way so an interrupted run keeps what it paid for."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.ingest import vector_rows
from ragrig.retrieval.ingest.vector_rows import CachedRows
from ragrig.retrieval.vector_check import first_bad_row

log = logging.getLogger(__name__)


def embed_with_cache(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts: Sequence[str],
    shas: Sequence[str],
    **kw: Any,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (rows in order, as an array) and how many were newly embedded (the rest came from the
    cache): ``ensure_cached``, then the rows read back (``vector_rows.CachedRows``). Ingest itself keeps no
    matrix: it ensures and hands the build steps the rows to read a block at a time."""
    new = ensure_cached(embedder, cache, texts, shas, **kw)
    return cached_rows(embedder, cache, shas).array(), new


def cached_rows(embedder: Embedder, cache: Any, shas: Sequence[str]) -> CachedRows:
    """The rows of ``shas`` as ``embedder``'s vectors in ``cache`` (the embedding cache, or a partition's
    ``ShardCache``), checked as the cache checks them when read."""
    return CachedRows(cache, embedder.id, shas, embedder.dim, embedder.cfg.normalize)


def ensure_cached(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts: Sequence[str],
    shas: Sequence[str],
    *,
    tokens: Sequence[int] | None = None,
    progress: bool = False,
    on_batch: Callable[[int], None] | None = None,
    chunk_size: int = 512,
    warn: Callable[[str], None] | None = None,
    desc: str = "embed",
) -> int:
    """Every text's vector in ``cache``; returns how many were newly embedded (the rest were there). No vector is
    kept: the cache is read a block of ``vector_rows.BLOCK`` at a time to see which are there.

    Identical texts are embedded once, in batches of similar token counts, longest first (``tokens``: the
    texts' model token counts, when the caller has them; counted here otherwise). Only the texts to embed are
    read from ``texts``, a batch at a time (an ingest's are rows read from disk: ``tables.Column``). New vectors
    are written to the cache every ``chunk_size`` texts, so an interrupted run keeps what it paid for.

    New vectors are verified as they are made, as cached ones are read (``vector_check.py``: the model's
    width, finite, not zero, unit length for a normalising model): one that fails stops the ingest with one
    line naming the model, before anything of that batch is cached or published.

    Cached vectors are verified first (checksum, length, finite, norm): one that fails is re-embedded like a
    miss, never used, and ``warn`` (and the log) get one line naming the cache and the reasons.
    """
    present: set[str] = set()
    bad: dict[str, str] = {}
    block = vector_rows.BLOCK
    for lo in range(0, len(shas), block):
        good, failed, unsummed = cache.get_checked(embedder.id, shas[lo : lo + block],
                                                   dim=embedder.dim, normalized=embedder.cfg.normalize)
        if unsummed:  # rows written before checksums, checked by value: give them one
            cache.put_many(embedder.id, [(sha, good[sha]) for sha in unsummed])
        present.update(good)
        bad.update(failed)
    if bad:
        reasons = ", ".join(f"{n} {why}" for why, n in Counter(bad.values()).most_common())
        note = (f"embedding cache {cache.path}: {len(bad)} cached vector(s) of {embedder.id} failed verification "
                f"({reasons}); "
                "re-embedded them, the bad entries were not used")
        log.warning(note)
        if warn is not None:
            warn(note)
    missing = [i for i, sha in enumerate(shas) if sha not in present]
    if tokens is None:  # counted a block at a time: ``texts`` may be rows read from disk (``tables.Column``)
        lengths = [n for lo in range(0, len(missing), block)
                   for n in embedder.count_tokens([texts[i] for i in missing[lo:lo + block]])]
    else:
        lengths = [tokens[i] for i in missing]
    todo: dict[str, tuple[int, int]] = {}  # sha -> (row, tokens), first occurrence; its text read when embedded
    for i, n in zip(missing, lengths):
        todo.setdefault(shas[i], (i, n))
    items = sorted(todo.items(), key=lambda it: -it[1][1])
    bar = None
    if progress and items:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc=desc, unit="chunk")
    for i in range(0, len(items), chunk_size):
        part = items[i : i + chunk_size]
        vecs = embedder.encode_sorted([texts[i] for _, (i, _n) in part], prefix=embedder.cfg.document_prefix,
                                      on_batch=bar.update if bar is not None else None)
        _verify_new(embedder, vecs)
        cache.put_many(embedder.id, [(sha, v) for (sha, _), v in zip(part, vecs)])
        if on_batch is not None:
            on_batch(len(part))
    if bar is not None:
        bar.close()
    return len(items)


def _verify_new(embedder: Embedder, vecs: np.ndarray) -> None:
    bad = first_bad_row(np.asarray(vecs), embedder.dim, embedder.cfg.normalize)
    if bad is not None:
        raise RagrigError(f"embedding model {embedder.id}: a document vector is unusable ({bad[1]}); nothing "
                          "of it was cached or published")
