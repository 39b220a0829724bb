"""The on-disk format of one index version: the one definition its writer (ingest's build step), its reader
(``IndexVersion``), ``health`` and ``reset`` share.

    versions/vNNNNNN/
        documents.jsonl   one Document per line (``Document.to_dict``), in doc id order
        chunks.jsonl      one Chunk per line (``Chunk.to_dict``), in corpus order: the row order of BM25 too
        reader/           what a reader needs of every row, derived once (``reader_files.py``): where each row's
                          line starts, the chunk ids, their order, de-duplication keys, header and term indexes
        bm25/             bm25s' own numpy/JSON files (``Bm25Index.save``), or, above
                          ``index.bm25.shard_max_chunks`` chunks, ``shards.json`` and one such folder per shard
                          (``bm25_shards.py``); the manifest's ``bm25.shards`` is their number, ``files`` has each
        keywords.json     the keyword library (``retrieval.keywords``)
        vectors.npy       one unit float32 vector per chunk, in chunks.jsonl's order (``index/vectors.py``)
        vectors.hnsw      the seeded HNSW graph over them (``index/hnsw.py``), when the version is searched
                          approximately; the manifest's ``vectors.hnsw`` holds the parameters it was built with;
                          above ``hnsw.shard_max_chunks`` rows ``vectors.hnsw.000``, ``.001``, …, one graph per
                          shard of rows (the manifest's ``vectors.hnsw.shards`` is their number)
        config.yaml       the resolved config that built the version
        manifest.json     written last: a folder without it is not a version; ``files`` holds the sha256 of
                          every other file (versions written before it existed are checked by counts and ids)
    Chroma: one collection per version, named ``<index key>-<version>``, ids = chunk ids

An index written by an earlier ragrig opens as long as these names and the manifest keys below stay.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import RagrigConfig
from ragrig.configs.redact import url_credentials
from ragrig.retrieval.documents import Chunk, Document, sha256_text
from ragrig.retrieval.index.bm25_shards import shard_count
from ragrig.retrieval.index.chroma import add_vectors, writes_collection
from ragrig.retrieval.index.files import write_json
from ragrig.retrieval.json_loads import loads

MANIFEST = "manifest.json"
DOCUMENTS = "documents.jsonl"
CHUNKS = "chunks.jsonl"
KEYWORDS = "keywords.json"
BM25_DIR = "bm25"
CONFIG = "config.yaml"
VECTORS = "vectors.npy"
HNSW_GRAPH = "vectors.hnsw"


# ---- Chroma collections ------------------------------------------------------
def collection_name(index_key: str, version: str) -> str:
    return f"{index_key}-{version}"


def collection_version(index_key: str, name: str) -> str | None:
    """The version a collection of this index holds (``None``: the collection belongs to another index)."""
    prefix = collection_name(index_key, "")
    return name[len(prefix) :] if name.startswith(prefix) else None


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """What a chunk's record in the collection carries besides its id and vector (for inspection: search
    filters read the chunks table). Frontmatter fields get an ``fm_`` prefix."""
    return {
        "doc_id": chunk.doc_id,
        "level": chunk.level,
        "header": chunk.header,
        **{f"fm_{k}": v for k, v in chunk.metadata.items() if k != "format"},
        "format": chunk.metadata.get("format", ""),
    }


def add_chunks(collection: Any, chunks: list[Chunk], vectors: Any, *, upsert: bool = False) -> None:
    """``chunks`` and their ``vectors`` (one row each, in order) into a version's Chroma collection: the one
    writer of its rows, for a build, a Dask worker's partition (``upsert``: a retried partition writes the same
    rows again) and a restored store."""
    add_vectors(collection, [c.chunk_id for c in chunks], vectors, [chunk_metadata(c) for c in chunks], upsert=upsert)


# ---- tables ------------------------------------------------------------------
def jsonl_line(row: dict[str, Any]) -> bytes:
    """A table row's line: every writer of a table or its shards writes these bytes (an ingest copies them)."""
    return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")


class JsonlWriter:
    """A JSON-lines file written a row (``add``) or whole lines' bytes (``add_lines``) at a time; ``ends``: where
    each line starts, then the file's size so far."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "wb")
        self.ends = array("q", [0])

    def add(self, row: dict[str, Any]) -> None:
        line = jsonl_line(row)
        self.add_lines(line, [len(line)])

    def add_lines(self, data: bytes, lengths: Iterable[int]) -> None:
        """``data``: whole lines, of these ``lengths`` in bytes."""
        self.fh.write(data)
        for n in lengths:
            self.ends.append(self.ends[-1] + n)

    def close(self) -> None:
        self.fh.close()


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> np.ndarray:
    """One JSON object a line; returns where each line starts, then the file's size (int64)."""
    out = JsonlWriter(path)
    try:
        for row in rows:
            out.add(row)
    finally:
        out.close()
    return np.frombuffer(out.ends, dtype=np.int64).copy()


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield loads(line)


def write_tables(version_dir: Path, docs: Iterable[Document], chunks: Iterable[Chunk]) -> np.ndarray:
    """The two tables; returns where each chunk's line starts in ``chunks.jsonl``, then the file's size (what a
    reader finds a row by: ``reader_files.py``)."""
    write_jsonl(version_dir / DOCUMENTS, (d.to_dict() for d in docs))
    return write_jsonl(version_dir / CHUNKS, (c.to_dict() for c in chunks))


def read_documents(version_dir: Path) -> Iterator[Document]:
    for d in iter_jsonl(version_dir / DOCUMENTS):
        yield Document.from_dict(d)


def read_chunks(version_dir: Path) -> list[Chunk]:
    return [Chunk.from_dict(d) for d in iter_jsonl(version_dir / CHUNKS)]


def table_shas(version_dir: Path) -> tuple[set[str], set[str]]:
    """The content hashes a version folder refers to: (chunk search texts, documents); the caches' keys.
    A folder still being written (or left by a crash) counts with whatever tables it has."""
    chunks: set[str] = set()
    docs: set[str] = set()
    if (version_dir / CHUNKS).is_file():
        chunks.update(d["sha256"] for d in iter_jsonl(version_dir / CHUNKS))
    if (version_dir / DOCUMENTS).is_file():
        docs.update(d["sha256"] for d in iter_jsonl(version_dir / DOCUMENTS))
    return chunks, docs


# ---- keywords and config -------------------------------------------------------
def write_keywords(version_dir: Path, library: dict[str, Any]) -> None:
    write_json(version_dir / KEYWORDS, library)


def read_keywords(version_dir: Path) -> dict[str, Any]:
    path = version_dir / KEYWORDS
    return json.loads(path.read_text()) if path.exists() else {"terms": []}


def write_config(version_dir: Path, cfg: RagrigConfig) -> None:
    """The resolved config, every URL's credentials masked (``http://***@host``): a version's files are read by
    whoever can read the index, and the key is no part of what built it."""
    (version_dir / CONFIG).write_text(url_credentials(cfg.to_yaml()), encoding="utf-8")


# ---- file hashes -------------------------------------------------------------
def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hashes(version_dir: Path) -> dict[str, str]:
    """The sha256 of every file of a version folder but the manifest, by posix path relative to the folder:
    the manifest's ``files``, against which ingest and readers check a version before trusting it."""
    out: dict[str, str] = {}
    for p in sorted(version_dir.rglob("*")):
        rel = p.relative_to(version_dir).as_posix()
        if p.is_file() and rel != MANIFEST:
            out[rel] = file_sha256(p)
    return out


REQUIRED_MANIFEST = {
    "version": str, "index_key": str, "counts": dict, "chunk_ids_sha256": str, "documents_sha256": str,
    "embedding": dict, "chroma": dict,
}


def manifest_problem(manifest: Any) -> str | None:
    """What makes a parsed manifest unusable (a missing key, a wrong type), or None."""
    if not isinstance(manifest, dict):
        return f"not a JSON object (got {type(manifest).__name__})"
    for key, kind in REQUIRED_MANIFEST.items():
        if not isinstance(manifest.get(key), kind):
            return f"'{key}' is missing or not a {kind.__name__}"
    counts, emb, chroma = manifest["counts"], manifest["embedding"], manifest["chroma"]
    if not all(isinstance(counts.get(k), int) and counts[k] >= 0 for k in ("documents", "chunks")):
        return "'counts' needs documents and chunks as non-negative integers"
    if not isinstance(emb.get("model_id"), str) or not isinstance(emb.get("dim"), int):
        return "'embedding' needs model_id and dim"
    if "collection" not in chroma or not isinstance(chroma["collection"], (str, type(None))):
        return "'chroma' needs collection (a name, or null when the version wrote none)"
    files = manifest.get("files")
    if files is not None and not (isinstance(files, dict) and all(isinstance(v, str) for v in files.values())):
        return "'files' is not a mapping of path to sha256"
    return None


# ---- manifest ----------------------------------------------------------------
def chunk_ids_hash(chunk_ids: Iterable[str]) -> str:
    """The manifest's ``chunk_ids_sha256``: what ``health`` checks the tables and stores against."""
    return sha256_text("\n".join(chunk_ids))


def new_manifest(
    cfg: RagrigConfig,
    *,
    version: str,
    index_key: str,
    corpus_kind: str,
    model_id: str,
    dim: int,
    docs: Collection[Document],
    chunks: Sequence[Chunk],
    corpus_file: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
    hnsw: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The manifest of a version built from ``cfg``. ``corpus_file`` (BEIR): the corpus file's hash and
    extractor, and what failed in it, so an unchanged file is recognised without parsing it. ``files``: the
    version's ``file_hashes``. ``hnsw``: the parameters of the graph file written beside the vectors, if any."""
    manifest: dict[str, Any] = {
        "version": version,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "index_key": index_key,
        "ingest_hash": cfg.ingest_hash(),
        "fingerprint": cfg.ingest_fingerprint(),
        "corpus_kind": corpus_kind,
        "embedding": {"model_id": model_id, "dim": dim, "model": cfg.embedding.model},
        "chroma": {"mode": cfg.index.chroma.mode,  # collection null: the version wrote none (chroma.writes_collection)
                   "collection": collection_name(index_key, version) if writes_collection(cfg) else None},
        "counts": {"documents": len(docs), "chunks": len(chunks)},
        "chunk_ids_sha256": chunk_ids_hash(c.chunk_id for c in chunks),
        "documents_sha256": sha256_text("\n".join(f"{d.doc_id}\t{d.sha256}" for d in docs)),
        "vectors": {"file": VECTORS, "dtype": "float32", "hnsw": hnsw},
        "bm25": {"shards": shard_count(cfg.index.bm25, len(chunks))},
    }
    if corpus_file is not None:
        manifest["corpus_file"] = corpus_file
    if files is not None:
        manifest["files"] = files
    return manifest


def write_manifest(version_dir: Path, manifest: dict[str, Any]) -> None:
    """Atomically; the last file of a version (its presence is what makes the folder a version)."""
    write_json(version_dir / MANIFEST, manifest)


def read_manifest(version_dir: Path) -> dict[str, Any]:
    """Raises FileNotFoundError for a folder without one, ValueError (json.JSONDecodeError, UnicodeDecodeError)
    for a damaged one; ``manifest_problem`` says whether a parsed one is usable."""
    return json.loads((version_dir / MANIFEST).read_text(encoding="utf-8"))
