"""Remove one config's index (all its versions and Chroma collections) and the cache entries only it
uses. Entries another index under the same home still uses are kept; nothing else is touched."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.index.files import ingest_lock
from ragrig.retrieval.index.format import collection_name, collection_version, table_shas
from ragrig.retrieval.index.layout import Layout


@dataclass
class ResetPlan:
    index_dir: Path
    exists: bool
    versions: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    embedding_rows: int = 0
    extract_rows: int = 0


def _shas(index_dir: Path) -> tuple[set[str], set[str]]:
    """(chunk text, document) hashes that any version folder of an index refers to."""
    chunks: set[str] = set()
    docs: set[str] = set()
    vdir = index_dir / "versions"
    if vdir.is_dir():
        for v in vdir.iterdir():
            c, d = table_shas(v)
            chunks |= c
            docs |= d
    return chunks, docs


def plan_reset(cfg: RagrigConfig) -> tuple[ResetPlan, set[str], set[str]]:
    layout = Layout(cfg)
    plan = ResetPlan(layout.index_dir, layout.index_dir.exists())
    if not plan.exists:
        return plan, set(), set()
    plan.versions = layout.published_versions()
    plan.collections = [collection_name(layout.key, v) for v in plan.versions]
    mine_chunks, mine_docs = _shas(layout.index_dir)
    for other in (layout.home / "indexes").iterdir():
        if other != layout.index_dir and other.is_dir():
            c, d = _shas(other)
            mine_chunks -= c
            mine_docs -= d
    return plan, mine_chunks, mine_docs


def _delete_rows(db: Path, sql: str, keys: set[str]) -> int:
    if not db.exists() or not keys:
        return 0
    con = sqlite3.connect(db, timeout=60)
    try:
        n = 0
        items = sorted(keys)
        for i in range(0, len(items), 900):
            part = items[i : i + 900]
            n += con.execute(sql.format(",".join("?" * len(part))), part).rowcount
        con.commit()
        return n
    finally:
        con.close()


def reset(cfg: RagrigConfig) -> ResetPlan:
    from ragrig.retrieval.index import chroma

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
        plan.embedding_rows = _delete_rows(layout.embedding_cache, "DELETE FROM vectors WHERE sha IN ({})", chunk_shas)
        plan.extract_rows = _delete_rows(layout.extract_cache, "DELETE FROM docs WHERE sha IN ({})", doc_shas)
    shutil.rmtree(layout.index_dir)
    from ragrig.retrieval.index.chroma import _CLIENTS

    _CLIENTS.pop(("embedded", str(layout.chroma_dir)), None)
    return plan

