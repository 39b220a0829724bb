"""A published index version, read-only: manifest, documents, chunks, BM25 and the Chroma collection
(files as ``format.py`` defines them)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from ragrig.configs.errors import IndexNotFoundError, RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.index.format import BM25_DIR, read_chunks, read_documents, read_keywords, read_manifest
from ragrig.retrieval.index.layout import Layout


class IndexVersion:
    def __init__(self, cfg: RagrigConfig, layout: Layout, version: str) -> None:
        self.cfg = cfg
        self.layout = layout
        self.version = version
        self.dir = layout.version_dir(version)
        try:
            self.manifest: dict[str, Any] = read_manifest(self.dir)
        except FileNotFoundError:
            raise IndexNotFoundError(f"index version {version} at {self.dir} is incomplete (no manifest)") from None

    @classmethod
    def current(cls, cfg: RagrigConfig) -> IndexVersion:
        layout = Layout(cfg)
        version = layout.current_version()
        if version is None:
            raise IndexNotFoundError(
                f"no published index for this config (looked in {layout.index_dir}); run `ragrig ingest` first"
            )
        return cls(cfg, layout, version)

    @cached_property
    def chunks(self) -> list[Chunk]:
        return read_chunks(self.dir)

    @cached_property
    def chunk_index(self) -> dict[str, int]:
        return {c.chunk_id: i for i, c in enumerate(self.chunks)}

    def documents(self) -> Iterator[Document]:
        return read_documents(self.dir)

    @cached_property
    def documents_by_id(self) -> dict[str, Document]:
        return {d.doc_id: d for d in self.documents()}

    @cached_property
    def keywords(self) -> dict[str, Any]:
        return read_keywords(self.dir)

    @property
    def bm25_dir(self) -> Path:
        """The folder ``Bm25Index.load`` reads."""
        return self.dir / BM25_DIR

    @property
    def model_id(self) -> str:
        return str(self.manifest["embedding"]["model_id"])

    @property
    def collection_name(self) -> str:
        return str(self.manifest["chroma"]["collection"])

    def collection(self) -> Any:
        from ragrig.retrieval.index.chroma import chroma_client

        client = chroma_client(self.cfg.index.chroma, self.layout.chroma_dir)
        try:
            return client.get_collection(self.collection_name)
        except Exception as exc:
            raise RagrigError(
                f"Chroma collection {self.collection_name} of version {self.version} is missing: {exc}"
            ) from None
