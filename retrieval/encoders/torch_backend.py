"""The sentence-transformers backend (torch): any sentence-transformers name or local folder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.encoders.device import resolve_device


class TorchEncoder:
    backend = "torch"

    def __init__(self, target: str, cfg: EmbeddingConfig) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the weight-loading bar is noise on every command
        self.cfg = cfg
        try:
            self.model = SentenceTransformer(target, device=resolve_device(cfg.device))
        except Exception as exc:
            raise InputError(
                f"embedding.model: cannot load {cfg.model!r} ({type(exc).__name__}: {str(exc)[:200]}). "
                "Offline, use a local path or a packaged model (all-MiniLM-L6-v2, bge-small-en-v1.5)."
            ) from None

    @property
    def window(self) -> int:
        """Max tokens of text (special tokens excluded) the model reads before truncating."""
        return int(self.model.max_seq_length) - 2

    @property
    def dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        enc = self.model.tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        return [len(x) for x in enc]

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        vecs = self.model.encode(list(texts), batch_size=self.cfg.batch_size, normalize_embeddings=self.cfg.normalize,
                                 show_progress_bar=progress, convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32)
