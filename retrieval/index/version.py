"""A published index version, read-only: manifest, documents, chunks, BM25 and the Chroma collection
(files as ``format.py`` defines them).

A reader opens the current version with ``IndexVersion.current``: it pins that version with a lease
(``leases.py``) that prune respects, so the version stays whole for as long as the reader holds it, and it
checks the version against its manifest (``verify.py``) before serving it. Anything broken is one
``IndexDamagedError`` that names the version and the file and says that ``ragrig ingest`` rebuilds it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import IndexDamagedError, IndexNotFoundError, InputError
from ragrig.configs.models import HnswConfig, RagrigConfig
from ragrig.retrieval.documents import Document
from ragrig.retrieval.index import hnsw
from ragrig.retrieval.index.chunk_table import ChunkTable, RowsById
from ragrig.retrieval.index.format import BM25_DIR, CHUNKS, VECTORS, read_chunks, read_documents, read_keywords
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.leases import Lease
from ragrig.retrieval.index.reader_files import READER_DIR, has_reader, load_table
from ragrig.retrieval.index.vectors import read_vectors, shape_problem
from ragrig.retrieval.index.verify import check_collection, load_manifest, verify_version

log = logging.getLogger(__name__)

REBUILD = "run `ragrig ingest` to rebuild it"
OPEN_TRIES = 20  # CURRENT moving on while a reader opens it (each publish + prune): read it again


class IndexVersion:
    def __init__(self, cfg: RagrigConfig, layout: Layout, version: str, lease: Lease | None = None) -> None:
        self.cfg = cfg
        self.layout = layout
        self.version = version
        self.dir = layout.version_dir(version)
        self.lease = lease
        if not (self.dir / "manifest.json").exists() and self.dir.is_dir():
            raise IndexNotFoundError(f"index version {version} at {self.dir} is incomplete (no manifest)")
        manifest, problem = load_manifest(self.dir)
        if manifest is None:
            raise self.damaged(problem or "manifest unusable")
        self.manifest: dict[str, Any] = manifest

    @classmethod
    def current(cls, cfg: RagrigConfig) -> IndexVersion:
        """The published version, pinned for this reader (its lease) and checked against its manifest."""
        layout = Layout(cfg)
        for _ in range(OPEN_TRIES):
            version = layout.current_version()
            if version is None:
                if layout.current_file.exists():
                    raise IndexDamagedError(f"index {layout.key}: {layout.current_file} does not name a version; "
                                            f"{REBUILD}")
                raise IndexNotFoundError(
                    f"no published index for this config (looked in {layout.index_dir}); run `ragrig ingest` first"
                )
            lease = Lease(layout.index_dir, version)
            if layout.version_dir(version).is_dir():
                v = cls(cfg, layout, version, lease)
                v.check(chroma=False)  # the collection: checked by ``collection()``, which only vector search needs
                return v
            lease.release()  # pruned before the lease was taken; CURRENT names a newer version unless damaged
            if layout.current_version() == version:
                raise IndexDamagedError(f"index {layout.key}: CURRENT names {version}, which is missing; {REBUILD}")
        raise IndexDamagedError(f"index {layout.key}: CURRENT kept moving while opening it; try again")

    @classmethod
    def pinned(cls, cfg: RagrigConfig, version: str) -> IndexVersion:
        """``version`` of ``cfg``'s index (one another process opened as current: a sweep's task on a Dask
        worker evaluates the version its driver saw), leased and checked like ``current``."""
        layout = Layout(cfg)
        lease = Lease(layout.index_dir, version)
        if not layout.version_dir(version).is_dir():
            lease.release()
            raise IndexNotFoundError(f"index {layout.key}@{version} is gone (pruned while in use?); "
                                     f"is RAGRIG_HOME on storage every worker shares?")
        v = cls(cfg, layout, version, lease)
        v.check(chroma=False)
        return v

    def damaged(self, problem: str) -> IndexDamagedError:
        return IndexDamagedError(f"index {self.layout.key}@{self.version} is damaged: {problem}; {REBUILD}")

    def check(self, chroma: bool = True) -> None:
        """Raise ``IndexDamagedError`` unless every file matches the manifest (and, with ``chroma``, the
        collection holds one vector per chunk). Files this machine checked before and that have not changed since
        are not hashed again (``verified.py``)."""
        problems = verify_version(self.cfg, self.dir, self.layout.chroma_dir, chroma=chroma,
                                  stamps=self.layout.verified_dir)
        if problems:
            more = f" (and {len(problems) - 1} more problems: `ragrig health`)" if len(problems) > 1 else ""
            raise self.damaged(problems[0] + more)

    def release(self) -> None:
        """Give up this reader's pin on the version (a later prune may remove it)."""
        if self.lease is not None:
            self.lease.release()

    @cached_property
    def chunks(self) -> ChunkTable:
        """The rows: parsed from chunks.jsonl as they are read when the version has a ``reader/``
        (``reader_files.py``), else all parsed now (versions written before it)."""
        n = self.manifest["counts"]["chunks"]
        if has_reader(self.dir):
            try:
                return load_table(self.dir, n, self.dir / CHUNKS, self.keywords, self.damaged)
            except (OSError, ValueError) as exc:
                raise self.damaged(f"{READER_DIR}/ is unreadable ({type(exc).__name__}: {str(exc)[:160]})") from None
        try:
            chunks = read_chunks(self.dir)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self.damaged(f"chunks.jsonl is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        if len(chunks) != n:
            raise self.damaged(f"chunks.jsonl has {len(chunks)} chunks, the manifest {n}")
        return ChunkTable.of(chunks, self.keywords)

    @property
    def chunk_index(self) -> RowsById:
        """Chunk id -> row."""
        return self.chunks.rows_by_id

    def documents(self) -> Iterator[Document]:
        return read_documents(self.dir)

    @cached_property
    def documents_by_id(self) -> dict[str, Document]:
        try:
            return {d.doc_id: d for d in self.documents()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self.damaged(f"documents.jsonl is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None

    @cached_property
    def keywords(self) -> dict[str, Any]:
        try:
            library = read_keywords(self.dir)
        except (OSError, ValueError) as exc:
            raise self.damaged(f"keywords.json is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        if not isinstance(library, dict) or not isinstance(library.get("terms", []), list):
            raise self.damaged("keywords.json is not a keyword library (no 'terms' list)")
        return library

    @property
    def has_vectors(self) -> bool:
        """Whether the version stores its vectors (versions written before they did are searched by Chroma)."""
        return isinstance(self.manifest.get("vectors"), dict)

    @cached_property
    def vectors(self) -> np.ndarray:
        """The version's unit vectors, one row per chunk (memory-mapped, read-only)."""
        try:
            vecs = read_vectors(self.dir)
        except (OSError, ValueError) as exc:
            raise self.damaged(f"{VECTORS} is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        problem = shape_problem(vecs, self.manifest)
        if problem:
            raise self.damaged(problem)
        return vecs

    def hnsw_graphs(self, cfg: HnswConfig) -> list[Any]:
        """The seeded HNSW graph's shards over ``vectors``: the files ingest wrote when they were built with these
        parameters, else built now in memory (deterministic either way; ``index/hnsw.py``). Files built with the
        same parameters in another number of shards (a version written before the config's shard count
        changed, or before graphs had shards) answer as they are, with a warning, rather than a rebuild at every
        open (~25 min at 1M): the next ingest rebuilds them (``ingest.current.outdated``)."""
        n = len(self.vectors)
        want, built = hnsw.params(cfg, n), (self.manifest.get("vectors") or {}).get("hnsw")
        shards = hnsw.stored_shards(built, want, n)
        names = hnsw.file_names(shards) if shards else []
        if names and all((self.dir / name).is_file() for name in names):
            if built != want:
                log.warning("index %s@%s: its HNSW graph was built in %d shard(s), the config asks for %d: it answers "
                            "with the graph it has until the next ingest rebuilds it", self.layout.key, self.version,
                            shards, len(hnsw.bounds(cfg, n)))
            try:
                return [hnsw.load(self.dir / name) for name in names]
            except (OSError, ValueError, RuntimeError) as exc:
                raise self.damaged(f"a graph file is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        log.info("index %s@%s: building its HNSW graph in memory (%d vectors)", self.layout.key, self.version, n)
        return [hnsw.build(np.asarray(self.vectors[lo:hi]), cfg, first_row=lo) for lo, hi in hnsw.bounds(cfg, n)]

    @property
    def bm25_dir(self) -> Path:
        """The folder ``Bm25Index.load`` reads."""
        return self.dir / BM25_DIR

    @property
    def model_id(self) -> str:
        return str(self.manifest["embedding"]["model_id"])

    @property
    def collection_name(self) -> str | None:
        """The version's Chroma collection, or None: it wrote none (``chroma.writes_collection``)."""
        name = self.manifest["chroma"]["collection"]
        return None if name is None else str(name)

    def collection(self) -> Any:
        """The version's Chroma collection, checked to hold one vector per chunk."""
        from ragrig.retrieval.index.chroma import chroma_client

        if self.collection_name is None:
            raise InputError(f"index {self.layout.key}@{self.version} has no Chroma collection: only index.vector_search.mode: "
                              "chroma or index.chroma.mode: http write one; run `ragrig ingest` with that setting "
                              "(it writes a new version with one)")
        problems = check_collection(self.cfg, self.layout.chroma_dir, self.manifest)
        if problems:
            raise self.damaged(problems[0])
        client = chroma_client(self.cfg.index.chroma, self.layout.chroma_dir)
        try:
            return client.get_collection(self.collection_name)
        except Exception as exc:
            raise self.damaged(f"Chroma collection {self.collection_name} is missing ({exc})") from None
