"""Operator checks on published indexes: versions, counts, model, and cross-store consistency.

A version is consistent when the chunk ids in its chunks table, its manifest (count and id hash), its BM25
index (document count) and its Chroma collection (ids) are the same set, with no duplicates.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.index.format import BM25_DIR, CHUNKS, chunk_ids_hash, iter_jsonl, read_manifest
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion


@dataclass
class VersionHealth:
    version: str
    current: bool
    chunks: int = 0
    documents: int = 0
    model_id: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class IndexHealth:
    index_key: str
    index_dir: str
    current: str | None
    versions: list[VersionHealth] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # temp/trash dirs, orphan collections (swept by the next ingest)

    @property
    def ok(self) -> bool:
        return self.current is not None and all(v.ok for v in self.versions)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d


def check_version(cfg: RagrigConfig, layout: Layout, version: str, current: bool) -> VersionHealth:
    vh = VersionHealth(version, current)
    vdir = layout.version_dir(version)
    try:
        manifest = read_manifest(vdir)
    except (OSError, json.JSONDecodeError) as exc:
        vh.problems.append(f"manifest unreadable: {exc}")
        return vh
    vh.model_id = manifest.get("embedding", {}).get("model_id", "")
    vh.documents = int(manifest.get("counts", {}).get("documents", 0))
    try:
        ids = [d["chunk_id"] for d in iter_jsonl(vdir / CHUNKS)]
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        vh.problems.append(f"chunks table unreadable: {exc}")
        return vh
    vh.chunks = len(ids)
    dups = [i for i, n in Counter(ids).items() if n > 1]
    if dups:
        vh.problems.append(f"{len(dups)} duplicate chunk ids in the chunks table (e.g. {dups[:3]})")
    if manifest.get("counts", {}).get("chunks") != len(ids):
        vh.problems.append(f"manifest says {manifest.get('counts', {}).get('chunks')} chunks, the table has {len(ids)}")
    if manifest.get("chunk_ids_sha256") != chunk_ids_hash(ids):
        vh.problems.append("chunk ids differ from the manifest's id hash")
    try:
        from ragrig.retrieval.index.bm25 import Bm25Index

        bm25 = Bm25Index.load(vdir / BM25_DIR, cfg.index.bm25)
        if bm25.size != len(ids):
            vh.problems.append(f"BM25 index has {bm25.size} documents, the table {len(ids)} chunks")
    except Exception as exc:
        vh.problems.append(f"BM25 index unreadable: {type(exc).__name__}: {exc}")
    try:
        col = IndexVersion(cfg, layout, version).collection()
        got = col.get(include=[])["ids"]
        if len(got) != len(set(got)):
            vh.problems.append("duplicate ids in the Chroma collection")
        if set(got) != set(ids):
            missing, extra = set(ids) - set(got), set(got) - set(ids)
            vh.problems.append(f"Chroma ids differ from the chunks table: {len(missing)} missing, {len(extra)} extra")
    except Exception as exc:
        vh.problems.append(f"Chroma collection: {exc}")
    return vh


def check_index(cfg: RagrigConfig, all_versions: bool = False) -> IndexHealth:
    layout = Layout(cfg)
    current = layout.current_version()
    health = IndexHealth(layout.key, str(layout.index_dir), current)
    published = layout.published_versions()
    if current is not None and current not in published:
        health.versions.append(VersionHealth(current, True, problems=["CURRENT names a version that is not complete"]))
    for v in published:
        if all_versions or v == current:
            health.versions.append(check_version(cfg, layout, v, v == current))
    health.leftovers += [p.name for p in layout.leftovers()]
    return health
