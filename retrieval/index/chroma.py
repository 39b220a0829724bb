"""Chroma, embedded (PersistentClient) or over HTTP, always with our own vectors.

Chroma's default embedding function downloads a model, so collections are made
with ``embedding_function=None`` and every add/query passes vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import ChromaConfig, RagrigConfig

log = logging.getLogger(__name__)

_CLIENTS: dict[tuple[str, str], Any] = {}  # one client per store and process (Chroma wants one per path)


def writes_collection(cfg: RagrigConfig) -> bool:
    """Whether a version built from ``cfg`` writes its vectors to a Chroma collection: only where something reads
    it, i.e. ``index.vector_search.mode: chroma``, or a Chroma server (``index.chroma.mode: http``) that other
    tools may query. Otherwise ``vectors.npy`` (and the seeded graph) answer every vector search, and the
    collection would be most of the build (75 % of it at 1M chunks, docs/scale.md) for nothing."""
    return cfg.index.vector_search.mode == "chroma" or cfg.index.chroma.mode == "http"


def _client_key(cfg: ChromaConfig, path: Path) -> tuple[str, str]:
    return (cfg.mode, str(path) if cfg.mode == "embedded" else f"{cfg.host}:{cfg.port}")


def chroma_client(cfg: ChromaConfig, path: Path) -> Any:
    """This process's client for the store (embedded at ``path``, or the configured server), opened once."""
    import chromadb
    from chromadb.config import Settings

    key = _client_key(cfg, path)
    client = _CLIENTS.get(key)
    if client is None:
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        try:
            if cfg.mode == "embedded":
                path.mkdir(parents=True, exist_ok=True)
                client = chromadb.PersistentClient(path=str(path), settings=settings)
            else:
                client = chromadb.HttpClient(host=cfg.host, port=cfg.port, settings=settings)
        except Exception as exc:
            if cfg.mode == "embedded":
                _drop_system(path)
            where = path if cfg.mode == "embedded" else f"http://{cfg.host}:{cfg.port}"
            raise RagrigError(f"cannot open Chroma ({cfg.mode}) at {where}: {type(exc).__name__}: {exc}") from None
        _CLIENTS[key] = client
    return client


def _drop_system(path: Path) -> None:
    """Chroma caches a store's system before starting it, so a start that failed (a damaged chroma.sqlite3)
    would be handed to every later client of that path, broken: drop it, so the next open starts afresh."""
    from chromadb.api.shared_system_client import SharedSystemClient

    system = SharedSystemClient._identifier_to_system.pop(str(path), None)  # noqa: SLF001
    if system is not None:
        try:
            system.stop()
        except Exception:
            pass


def forget_client(cfg: ChromaConfig, path: Path) -> None:
    """Close and drop this process's client for the store, so the next ``chroma_client`` opens a fresh one.
    For an embedded store about to be removed: Chroma keeps one system per path, which would otherwise go on
    serving (and writing to) the deleted files."""
    client = _CLIENTS.pop(_client_key(cfg, path), None)
    close = getattr(client, "close", None)
    if close is not None:
        close()


def _clean_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Chroma metadata values must be str/int/float/bool: lists become comma-joined strings."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if isinstance(v, bool | int | float | str):
            out[k] = v
        elif isinstance(v, list | tuple):
            out[k] = ",".join(str(x) for x in v)
        elif v is not None:
            out[k] = str(v)
    return out


def create_collection(client: Any, name: str, dim: int) -> Any:
    try:
        client.delete_collection(name)  # a leftover of a crashed build of the same version
    except Exception:
        pass
    return client.create_collection(
        name=name, embedding_function=None, metadata={"hnsw:space": "cosine", "dim": dim}
    )


def add_vectors(
    collection: Any,
    ids: Sequence[str],
    vectors: np.ndarray,
    metadatas: Sequence[dict[str, Any]],
    batch: int = 2000,
    upsert: bool = False,
) -> None:
    """In batches of ``batch`` rows; ``upsert``: rows already there are replaced (a retried writer)."""
    write = collection.upsert if upsert else collection.add
    for i in range(0, len(ids), batch):
        write(
            ids=list(ids[i : i + batch]),
            embeddings=vectors[i : i + batch].tolist(),
            metadatas=[_clean_meta(m) for m in metadatas[i : i + batch]],
        )


def delete_collection(client: Any, name: str) -> bool:
    try:
        client.delete_collection(name)
        return True
    except Exception:
        return False


def list_collections(client: Any) -> list[str]:
    cols = client.list_collections()
    return [c if isinstance(c, str) else c.name for c in cols]
