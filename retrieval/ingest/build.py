"""Ingest's build step: write a complete new index version in the format of ``index/format.py`` (tables,
BM25, keyword library, Chroma collection, config, manifest last, with every other file's sha256) and move it
into place, not yet published. A build that fails leaves no staging folder or collection behind.

``mark(point)`` is called between the parts ("index:tables", "index:bm25", "index:vectors", "index:chroma"): the
crash tests kill the process there and check that no broken version is ever published.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.index import chroma, hnsw, publish
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.format import (
    BM25_DIR,
    chunk_metadata,
    collection_name,
    file_hashes,
    new_manifest,
    write_config,
    write_keywords,
    write_manifest,
    write_tables,
)
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.vectors import graph_path, search_kind, unit_rows, write_vectors
from ragrig.retrieval.ingest.keyword_mining import build_library
from ragrig.retrieval.markdown import parse_headers


def build_version(
    cfg: RagrigConfig,
    layout: Layout,
    docs: list[Document],
    chunks: list[Chunk],
    vectors: np.ndarray,
    *,
    model_id: str,
    dim: int,
    corpus_kind: str,
    corpus_file: dict[str, Any] | None = None,
    mark: Callable[[str], None] = lambda point: None,
) -> str:
    """Write the version of ``docs`` and ``chunks`` (``vectors``: one row per chunk) and return its name.
    ``model_id`` and ``dim``: the embedding function's identity and width; ``corpus_kind``: directory or beir;
    ``corpus_file``: see ``format.new_manifest``."""
    version, staged = publish.stage(layout)
    try:
        _write(cfg, layout, version, staged, docs, chunks, vectors, model_id=model_id, dim=dim,
               corpus_kind=corpus_kind, corpus_file=corpus_file, mark=mark)
    except Exception:
        # an error (not a kill: the next ingest sweeps those) leaves no staging folder or collection behind
        shutil.rmtree(staged, ignore_errors=True)
        chroma.delete_collection(chroma.chroma_client(cfg.index.chroma, layout.chroma_dir),
                                 collection_name(layout.key, version))
        raise
    publish.complete(layout, version, staged)
    return version


def _write(cfg: RagrigConfig, layout: Layout, version: str, staged: Path, docs: list[Document], chunks: list[Chunk],
           vectors: np.ndarray, *, model_id: str, dim: int, corpus_kind: str, corpus_file: dict[str, Any] | None,
           mark: Callable[[str], None]) -> None:
    write_tables(staged, docs, chunks)
    mark("index:tables")
    Bm25Index.build([c.search_text for c in chunks], cfg.index.bm25).save(staged / BM25_DIR)
    titles = [h.title for d in docs for h in parse_headers(d.markdown)]
    write_keywords(staged, build_library(titles, [c.text for c in chunks]))
    mark("index:bm25")
    unit = unit_rows(vectors) if chunks else np.zeros((0, dim), dtype=np.float32)
    write_vectors(staged, unit)
    graph = None
    if search_kind(cfg.index.vector_search, len(chunks)) == "hnsw":
        graph = hnsw.params(cfg.index.vector_search.hnsw)
        hnsw.save(hnsw.build(unit, cfg.index.vector_search.hnsw), graph_path(staged))
    mark("index:vectors")
    client = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)
    col = chroma.create_collection(client, collection_name(layout.key, version), dim)
    if chunks:
        chroma.add_vectors(col, [c.chunk_id for c in chunks], vectors, [chunk_metadata(c) for c in chunks])
    mark("index:chroma")
    write_config(staged, cfg)
    manifest = new_manifest(cfg, version=version, index_key=layout.key, corpus_kind=corpus_kind, model_id=model_id,
                            dim=dim, docs=docs, chunks=chunks, corpus_file=corpus_file, files=file_hashes(staged),
                            hnsw=graph)
    write_manifest(staged, manifest)
