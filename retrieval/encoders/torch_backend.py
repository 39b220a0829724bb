"""The sentence-transformers backend (torch): any sentence-transformers name or local folder.

On CPU, texts are encoded (and the window, width and token counts read) by ``bert_forward.BertForward`` where
``forward_check.py`` has recorded it equal to sentence-transformers bit for bit for this model, device and set of
library versions: a cold ``ragrig query``, an ingest, a Dask worker or a server then import torch but neither
sentence-transformers nor transformers (~8 s of 2 cores here). Without a verdict yet the model is loaded by
sentence-transformers, checked against the lean forward on the probes, and the verdict recorded. A progress bar
(sentence-transformers' own), a GPU or a model the lean forward does not run: sentence-transformers, as before."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.encoders import forward_check
from ragrig.retrieval.encoders.bert_forward import BertForward
from ragrig.retrieval.encoders.device import resolve_device


class TorchEncoder:
    backend = "torch"

    def __init__(self, target: str, cfg: EmbeddingConfig, *, identity: str | None = None,
                 check_file: Path | None = None) -> None:
        self.cfg, self.target = cfg, target
        self.device = str(resolve_device(cfg.device))
        self.lean: BertForward | None = None
        self._st: Any = None
        self._lock = threading.Lock()
        key = forward_check.check_key(identity, self.device, cfg.normalize) \
            if identity and self.device == "cpu" and Path(target).is_dir() else None
        verdict = forward_check.recorded(check_file, key) if key else None
        if verdict:
            self.lean = BertForward.open(target)
        if self.lean is None:
            _ = self.model  # loaded now, as before: a model that cannot load is an error here
            if key and verdict is None:
                lean = BertForward.open(target)
                same = lean is not None and forward_check.same_output(
                    lean, self.model, batch_size=cfg.batch_size, normalize=cfg.normalize, target=target)
                forward_check.record(check_file, key, same)
                self.lean = lean if same else None

    @property
    def model(self) -> Any:
        """The ``SentenceTransformer`` (imported and loaded on first use)."""
        with self._lock:
            if self._st is None:
                self._st = self._load()
        return self._st

    def _load(self) -> Any:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the weight-loading bar is noise on every command
        try:
            return SentenceTransformer(self.target, device=self.device)
        except Exception as exc:
            raise InputError(
                f"embedding.model: cannot load {self.cfg.model!r} ({type(exc).__name__}: {str(exc)[:200]}). "
                "Offline, use a local path or a packaged model (all-MiniLM-L6-v2, bge-small-en-v1.5)."
            ) from None

    @property
    def window(self) -> int:
        """Max tokens of text (special tokens excluded) the model reads before truncating."""
        return self.lean.window if self.lean is not None else int(self.model.max_seq_length) - 2

    @property
    def dim(self) -> int:
        if self.lean is not None:
            return self.lean.dim
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if self.lean is not None:
            return self.lean.count_tokens(texts)
        enc = self.model.tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        return [len(x) for x in enc]

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        if self.lean is not None and not progress:
            return self.lean.encode(texts, batch_size=self.cfg.batch_size, normalize=self.cfg.normalize)
        vecs = self.model.encode(list(texts), batch_size=self.cfg.batch_size, normalize_embeddings=self.cfg.normalize,
                                 show_progress_bar=progress, convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32)
