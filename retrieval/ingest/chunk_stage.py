"""Ingest's chunking step over many documents, shared by the driver (``IngestPipeline.chunk``) and the Dask
workers (``partition.py``): the chunking parameters a config and its model give, and the documents chunked
one by one, a document that fails recorded (never stopping the rest)."""

from __future__ import annotations

from collections.abc import Callable

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Chunk, Document, FailedDoc
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document


def chunking_params(cfg: RagrigConfig, embedder: Embedder) -> ChunkingParams:
    """``chunking.*`` with the token ceiling the model's window (less the document prefix) allows."""
    window = embedder.window
    if cfg.embedding.document_prefix:
        window -= embedder.count_tokens([cfg.embedding.document_prefix])[0]
    limit = min(cfg.chunking.max_tokens or window, window)
    return ChunkingParams(
        max_header_level=cfg.chunking.max_header_level,
        max_tokens=limit,
        drop_empty_sections=cfg.chunking.drop_empty_sections,
        title_path=cfg.chunking.title_path,
        frontmatter=cfg.chunking.frontmatter,
    )


def chunk_documents(docs: list[Document], params: ChunkingParams, embedder: Embedder,
                    warn: Callable[[str], None]) -> tuple[list[Chunk], list[FailedDoc]]:
    """Every document's chunks, in document order, and the documents that failed to chunk (with the reason);
    ``warn`` hears of a document that gave no chunk."""
    out: list[Chunk] = []
    failed: list[FailedDoc] = []
    for d in docs:
        try:
            chunks = chunk_document(d, params, embedder.count_tokens)
        except Exception as exc:
            failed.append(FailedDoc(d.doc_id, "chunk", f"{type(exc).__name__}: {exc}"))
            continue
        if not chunks:
            warn(f"{d.doc_id}: no chunks (no text outside empty headers)")
        out.extend(chunks)
    return out, failed
