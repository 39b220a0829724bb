"""Ingest's build step: write a complete new index version in the format of ``index/format.py`` (tables,
BM25, keyword library, Chroma collection, config, manifest last, with every other file's sha256) and move it
into place, not yet published. A build that fails leaves no staging folder or collection behind.

``mark(point)`` is called between the parts ("index:tables", "index:bm25", "index:reader", "index:vectors",
"index:chroma"): the crash tests kill the process there and check that no broken version is ever published.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.index import chroma, hnsw, publish
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.format import (
    BM25_DIR,
    VECTORS,
    add_chunks,
    collection_name,
    file_hashes,
    new_manifest,
    write_config,
    write_keywords,
    write_manifest,
    write_tables,
)
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.reader_files import write_reader
from ragrig.retrieval.index.vectors import search_kind, unit_rows, write_vector_blocks
from ragrig.retrieval.ingest.keyword_mining import build_library
from ragrig.retrieval.ingest.tables import Column, slim
from ragrig.retrieval.ingest.vector_rows import VectorRows, as_rows, take
from ragrig.retrieval.markdown import parse_headers


def build_version(
    cfg: RagrigConfig,
    layout: Layout,
    docs: Collection[Document],
    chunks: Sequence[Chunk],
    vectors: VectorRows | np.ndarray,
    *,
    model_id: str,
    dim: int,
    corpus_kind: str,
    corpus_file: dict[str, Any] | None = None,
    mark: Callable[[str], None] = lambda point: None,
    staged: tuple[str, Path] | None = None,
    in_collection: set[str] | None = None,
    vector_files: dict[str, Any] | None = None,
    offsets: np.ndarray | None = None,
) -> str:
    """Write the version of ``docs`` and ``chunks`` (``vectors``: one row per chunk, an array or
    ``vector_rows.VectorRows``) and return its name.
    ``model_id`` and ``dim``: the embedding function's identity and width; ``corpus_kind``: directory or beir;
    ``corpus_file``: see ``format.new_manifest``. ``staged``: the (version, staging folder) of a
    ``staged_version`` the caller holds (a distributed ingest, whose workers wrote into it first), else one of
    its own; ``in_collection``: chunk ids the workers already wrote to the version's collection (it exists);
    ``vector_files``: ``{"hnsw": params or None}`` when ``write_vector_files`` already wrote the staged folder's
    vectors and graph (an ingest maps the graph's shards through its executor first), else written here;
    ``offsets``: the chunk rows' offsets when the staged folder's two tables are written already (an ingest writes
    them as its partitions come back: ``tables.write_tables``), else they are written here."""
    if staged is not None:
        version, folder = staged
        _write(cfg, layout, version, folder, docs, chunks, vectors, model_id=model_id, dim=dim,
               corpus_kind=corpus_kind, corpus_file=corpus_file, mark=mark, in_collection=in_collection,
               vector_files=vector_files, offsets=offsets)
        publish.complete(layout, version, folder)
        return version
    with staged_version(cfg, layout) as (version, folder):
        _write(cfg, layout, version, folder, docs, chunks, vectors, model_id=model_id, dim=dim,
               corpus_kind=corpus_kind, corpus_file=corpus_file, mark=mark, in_collection=in_collection,
               vector_files=vector_files, offsets=offsets)
        publish.complete(layout, version, folder)
    return version


@contextmanager
def staged_version(cfg: RagrigConfig, layout: Layout) -> Iterator[tuple[str, Path]]:
    """The next version's name and a new staging folder; an error (not a kill: the next ingest sweeps those)
    before the folder is complete leaves no staging folder or collection behind."""
    version, staged = publish.stage(layout)
    try:
        yield version, staged
    except Exception:
        if staged.exists():
            discard(cfg, layout, version, staged)
        raise


def discard(cfg: RagrigConfig, layout: Layout, version: str, staged: Path) -> None:
    """Remove a staging folder and its version's collection (a build that failed or has nothing to publish)."""
    shutil.rmtree(staged, ignore_errors=True)
    try:  # a Chroma server that is gone must not hide the error that brought us here
        chroma.delete_collection(chroma.chroma_client(cfg.index.chroma, layout.chroma_dir),
                                 collection_name(layout.key, version))
    except Exception:
        pass


def _write_collection(cfg: RagrigConfig, layout: Layout, version: str, chunks: Sequence[Chunk], vectors: VectorRows,
                      dim: int, in_collection: set[str] | None) -> None:
    client = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)
    name = collection_name(layout.key, version)
    if in_collection is None:
        col = chroma.create_collection(client, name, dim)
        rows = list(range(len(chunks)))
    else:  # the workers wrote the new chunks; the ones carried over from the published version are left
        col = client.get_collection(name, embedding_function=None)
        rows = [i for i, c in enumerate(chunks) if c.chunk_id not in in_collection]
    for places, vecs in take(vectors, rows):
        add_chunks(col, [chunks[i] for i in places], vecs, upsert=in_collection is not None)


def write_vector_files(cfg: RagrigConfig, staged: Path, vectors: VectorRows | np.ndarray, dim: int,
                       executor: Executor = IN_PROCESS) -> dict[str, int] | None:
    """``vectors.npy`` (unit rows, written a block at a time: ``index.vectors.write_vector_blocks``) and, when
    the version will be searched approximately, its HNSW graph's shards, each built by ``executor.map`` (on the
    workers under a distributed executor: they read the staged ``vectors.npy``). Returns the graph's parameters
    for the manifest (None: no graph)."""
    rows = as_rows(vectors, dim)
    n = len(rows)
    # scaled to unit length here and again by the writer, as every version's file has been: the second pass
    # moves the last bit of some rows, so doing it once would change the bytes (and scores) of every index
    write_vector_blocks(staged, (unit_rows(b) for b in rows.blocks()), n, rows.dim if n else dim)
    vs = cfg.index.vector_search
    if search_kind(vs, n) != "hnsw":
        return None
    ranges = hnsw.bounds(vs.hnsw, n)  # the shards read the file: a worker elsewhere, or here through a memory map
    calls = [(str(staged / VECTORS), lo, hi, vs.hnsw, str(staged / name))
             for (lo, hi), name in zip(ranges, hnsw.file_names(len(ranges)))]
    for name in executor.map("graph-shard", hnsw.build_shard, calls):
        if not (staged / name).is_file():
            raise RagrigError(f"the graph shard {name} was built but is not in {staged}: with flow.runner: dask "
                              "the ragrig home must be on a filesystem every worker shares; nothing was published")
    return hnsw.params(vs.hnsw, n)


def _write(cfg: RagrigConfig, layout: Layout, version: str, staged: Path, docs: Collection[Document],
           chunks: Sequence[Chunk], vectors: VectorRows, *, model_id: str, dim: int, corpus_kind: str,
           corpus_file: dict[str, Any] | None, mark: Callable[[str], None], in_collection: set[str] | None = None,
           vector_files: dict[str, Any] | None = None, offsets: np.ndarray | None = None) -> None:
    if offsets is None:
        offsets = write_tables(staged, docs, chunks)
    mark("index:tables")
    Bm25Index.write(Column(chunks, "search_text"), cfg.index.bm25, staged / BM25_DIR)
    titles = [h.title for d in docs for h in parse_headers(d.markdown)]
    library = build_library(titles, (c.text for c in chunks))
    write_keywords(staged, library)
    mark("index:bm25")
    rows, digests = slim(chunks)  # the rows read once more, without their texts, for reader/ and the manifest
    write_reader(staged, rows, library, offsets, digests)
    mark("index:reader")
    graph = write_vector_files(cfg, staged, vectors, dim) if vector_files is None else vector_files.get("hnsw")
    mark("index:vectors")
    if chroma.writes_collection(cfg):
        _write_collection(cfg, layout, version, chunks, as_rows(vectors, dim), dim, in_collection)
    mark("index:chroma")
    write_config(staged, cfg)
    manifest = new_manifest(cfg, version=version, index_key=layout.key, corpus_kind=corpus_kind, model_id=model_id,
                            dim=dim, docs=docs, chunks=rows, corpus_file=corpus_file, files=file_hashes(staged),
                            hnsw=graph)
    write_manifest(staged, manifest)
