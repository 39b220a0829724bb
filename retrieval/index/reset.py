"""Remove one config's index (all its versions and Chroma collections) and the cache entries only it
uses. Entries another index under the same home still uses are kept; nothing else is touched, but for the views'
whole-matrix copies (``cache/matrices``), which all go: copies keyed by content, remade by the next reader."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.cache.extractions import ExtractCache
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.files import ingest_lock
from ragrig.retrieval.index.format import collection_name, collection_version, table_shas
from ragrig.retrieval.index.layout import Layout, version_dirs


@dataclass
class ResetPlan:
    index_dir: Path
    exists: bool
    versions: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    embedding_rows: int = 0
    extract_rows: int = 0
    matrices: int = 0  # whole-matrix copies removed (cache/matrices: every index's, remade by the next reader)


def _shas(index_dir: Path) -> tuple[set[str], set[str]]:
    """(chunk text, document) hashes that any version folder of an index refers to."""
    chunks: set[str] = set()
    docs: set[str] = set()
    for v in version_dirs(index_dir):
        c, d = table_shas(v)
        chunks |= c
        docs |= d
    return chunks, docs


def plan_reset(cfg: RagrigConfig) -> tuple[ResetPlan, set[str], set[str]]:
    layout = Layout(cfg)
    where = layout.index_dir
    if where.is_symlink() or (where.exists() and not where.is_dir()):
        what = f"a link to {where.resolve()}" if where.is_symlink() else "a file"
        raise InputError(f"the index folder {where} is {what}, not a folder ragrig made; reset removes nothing "
                         "there (remove it by hand if you mean to)")
    plan = ResetPlan(where, where.exists())
    if not plan.exists:
        return plan, set(), set()
    plan.versions = layout.published_versions()
    plan.collections = [collection_name(layout.key, v) for v in plan.versions]
    mine_chunks, mine_docs = _shas(layout.index_dir)
    for other in layout.other_index_dirs():
        c, d = _shas(other)
        mine_chunks -= c
        mine_docs -= d
    return plan, mine_chunks, mine_docs


def reset(cfg: RagrigConfig) -> ResetPlan:
    plan, chunk_shas, doc_shas = plan_reset(cfg)
    if not plan.exists:
        return plan
    layout = Layout(cfg)
    with ingest_lock(layout.lock_file):
        if cfg.index.chroma.mode == "http":
            client = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)
            for name in chroma.list_collections(client):
                if collection_version(layout.key, name) is not None:
                    chroma.delete_collection(client, name)
        if layout.embedding_cache.exists() and chunk_shas:
            embeddings = EmbeddingCache(layout.embedding_cache)
            try:
                plan.embedding_rows = embeddings.delete(chunk_shas)
            finally:
                embeddings.close()
        if layout.extract_cache.exists() and doc_shas:
            extractions = ExtractCache(layout.extract_cache)
            try:
                plan.extract_rows = extractions.delete(doc_shas)
            finally:
                extractions.close()
        # the views' whole matrices are copies of embedding-cache rows, keyed by content, not by index: all go (a
        # reader remakes its own from the cache in one read), so none of this index's vectors is left behind
        copies = layout.cache_dir / "matrices"
        plan.matrices = len(list(copies.glob("*.npy"))) if copies.is_dir() else 0
        shutil.rmtree(copies, ignore_errors=True)
        chroma.forget_client(cfg.index.chroma, layout.chroma_dir)  # release the store before its folder goes
    shutil.rmtree(layout.index_dir)
    return plan
