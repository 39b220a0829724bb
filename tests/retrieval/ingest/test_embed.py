"""embed_with_cache: each distinct text embedded once, in token-ordered batches, rows back in input order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.ingest.embed import embed_with_cache


class RecordingEmbedder(Embedder):
    """No model: a text's vector is [number of words, length in characters, 1]; every model call is kept."""

    def __init__(self, batch_size: int = 2, document_prefix: str = "") -> None:
        # normalize=False: these vectors are not unit length, and the cache checks the norm of a normalising model's
        super().__init__(EmbeddingConfig(batch_size=batch_size, document_prefix=document_prefix, normalize=False))
        self.calls: list[list[str]] = []
        self.counted: list[list[str]] = []

    @property
    def dim(self) -> int:
        return 3

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        self.counted.append(list(texts))
        return [len(t.split()) for t in texts]

    def encode(self, texts: Sequence[str], *, prefix: str = "", progress: bool = False) -> np.ndarray:
        batch = [prefix + t for t in texts]
        self.calls.append(batch)
        return np.array([[len(t.split()), len(t), 1.0] for t in batch], dtype=np.float32)


def vec(text: str) -> list[float]:
    return [len(text.split()), len(text), 1.0]


TEXTS = ["a", "b b b", "c c", "b b b", "d d d d", "e"]
SHAS = ["sa", "sb", "sc", "sb", "sd", "se"]


def test_distinct_texts_once_longest_first_one_call_per_batch(tmp_path):
    emb = RecordingEmbedder(batch_size=2)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    vecs, new = embed_with_cache(emb, cache, TEXTS, SHAS)
    assert new == 5  # "b b b" twice, embedded once
    # token order, longest first (ties keep input order); each model call is one batch of <= 2
    assert emb.calls == [["d d d d", "b b b"], ["c c", "a"], ["e"]]
    assert vecs.tolist() == [vec(t) for t in TEXTS]  # rows in input order
    assert vecs.dtype == np.float32
    assert emb.counted == [["a", "b b b", "c c", "b b b", "d d d d", "e"]]  # counted here: no tokens given
    assert cache.count(emb.id) == 5


def test_given_token_counts_order_the_batches_and_the_cache_is_used(tmp_path):
    emb = RecordingEmbedder(batch_size=2)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    embed_with_cache(emb, cache, ["a", "b b b"], ["sa", "sb"])
    emb.calls.clear()
    # "a" and "b b b" are cached; the caller's counts (not whitespace words) decide the order of the rest
    vecs, new = embed_with_cache(emb, cache, TEXTS, SHAS, tokens=[1, 3, 9, 3, 2, 5])
    assert new == 3
    assert emb.calls == [["c c", "e"], ["d d d d"]]
    assert emb.counted == [["a", "b b b"]]  # only the first call counted
    assert vecs.tolist() == [vec(t) for t in TEXTS]


def test_cache_writes_every_chunk_size_and_the_document_prefix(tmp_path):
    emb = RecordingEmbedder(batch_size=8, document_prefix="passage: ")
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    seen: list[int] = []
    vecs, new = embed_with_cache(emb, cache, TEXTS, SHAS, chunk_size=2, on_batch=seen.append)
    assert seen == [2, 2, 1] and new == 5
    assert emb.calls[0] == ["passage: d d d d", "passage: b b b"]
    assert vecs.tolist() == [vec("passage: " + t) for t in TEXTS]


def test_nothing_to_embed(tmp_path):
    emb = RecordingEmbedder()
    vecs, new = embed_with_cache(emb, EmbeddingCache(tmp_path / "e.sqlite"), [], [])
    assert vecs.shape == (0, 3) and new == 0 and emb.calls == []


def test_progress_moves_after_every_model_batch_not_every_cache_write(tmp_path, monkeypatch):
    """A slow model takes minutes per cache write (512 texts): the bar must move with each batch."""
    import tqdm

    updates: list[int] = []

    class Bar:
        def __init__(self, *a, **k) -> None: ...
        def update(self, n: int) -> None:
            updates.append(n)
        def close(self) -> None: ...

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    emb = RecordingEmbedder(batch_size=2)
    done: list[int] = []
    embed_with_cache(emb, EmbeddingCache(tmp_path / "e.sqlite"), TEXTS, SHAS, progress=True, on_batch=done.append,
                     chunk_size=4)
    assert updates == [2, 2, 1]  # one per model call: 5 distinct texts in batches of 2
    assert done == [4, 1]        # on_batch still follows the cache writes
