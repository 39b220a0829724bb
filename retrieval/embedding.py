"""The embedding function the rest of ragrig uses: ``Embedder`` (lazy loading, the model id, token counts, the
window, ``encode``), over the backends in ``encoders/``. The embedding cache is ``cache/embeddings.py``;
ingest's cached, token-ordered embedding step is ``ingest/embed.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.encoders.catalog import MINILM, is_local
from ragrig.retrieval.encoders.resolve import ModelRef, resolve

log = logging.getLogger(__name__)

PACKAGED_MINILM = set(MINILM.aliases)
__all__ = ["PACKAGED_MINILM", "Embedder", "is_local", "model_id", "resolve_model"]


def resolve_model(name: str) -> str:
    """A model name or path -> what the backend loads (a packaged model's folder, a path, or a hub name)."""
    return resolve(EmbeddingConfig(model=name)).target


def model_id(cfg: EmbeddingConfig, memo_file: Path | None = None) -> str:
    """The identity of the embedding function: model content, backend, prefix, normalisation (the embedding
    cache's and the manifest's key). ``memo_file``: where a local folder's file digests are remembered."""
    return resolve(cfg, memo_file).model_id(cfg)


class Embedder:
    """Loads the model lazily; ``encode`` returns float32 rows (L2-normalised when configured)."""

    def __init__(self, cfg: EmbeddingConfig, memo_file: Path | None = None) -> None:
        self.cfg = cfg
        self.memo_file = memo_file
        self._ref: ModelRef | None = None
        self._id: str | None = None
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def ref(self) -> ModelRef:
        if self._ref is None:
            self._ref = resolve(self.cfg, self.memo_file)
        return self._ref

    @property
    def id(self) -> str:
        if self._id is None:
            if self.ref.hub:  # fetched by sentence-transformers on load: identify what it fetched
                _ = self.model
                self._ref = resolve(self.cfg, self.memo_file)
            self._id = self.ref.model_id(self.cfg)
            if self.ref.backend == "openai":  # what answers at the endpoint: its probe vector's digest
                self._id = self._id.removesuffix("]") + f"; probe:{self.model.probe_digest()}]"
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        self._id = value

    @property
    def model(self) -> Any:
        """The loaded backend (``encoders.torch_backend.TorchEncoder`` or ``encoders.onnx_backend.OnnxEncoder``)."""
        with self._lock:
            if self._model is None:
                ref = self.ref
                if ref.backend == "openai":
                    from ragrig.retrieval.encoders.endpoint_backend import EndpointEncoder

                    self._model = EndpointEncoder(self.cfg)
                elif ref.backend == "onnx":
                    from ragrig.retrieval.encoders.onnx_backend import OnnxEncoder

                    entry = ref.entry
                    self._model = OnnxEncoder(Path(ref.target), self.cfg, pooling=entry.pooling if entry else "",
                                              max_tokens=entry.max_tokens if entry else 0)
                else:
                    from ragrig.retrieval.encoders.torch_backend import TorchEncoder

                    check = self.memo_file.parent / "torch-forward.json" if self.memo_file is not None else None
                    self._model = TorchEncoder(ref.target, self.cfg, identity=None if ref.hub else ref.model_id(self.cfg),
                                               check_file=check)
        return self._model

    @cached_property
    def query_prefix(self) -> str:
        """What queries get before them (``ModelRef.query_prefix``), read once: every query asks."""
        return self.ref.query_prefix(self.cfg)

    @property
    def window(self) -> int:
        """Max tokens of text (special tokens excluded) the model reads before truncating."""
        return int(self.model.window)

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.model.count_tokens(texts) if texts else []

    def encode(self, texts: Sequence[str], *, prefix: str = "", progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.model.encode([prefix + t for t in texts] if prefix else list(texts), progress=progress)

    def encode_sorted(self, texts: Sequence[str], *, prefix: str = "",
                      on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Encode texts already ordered by token count, one model call per batch so the batches keep
        that order (sentence-transformers re-sorts a call by character length, a poor proxy for tokens: on SRD
        5.1 its batches padded to 1.34x the real tokens, token-ordered batches to 1.01x). ``on_batch(n)``
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
        return self.encode(queries, prefix=self.query_prefix)
