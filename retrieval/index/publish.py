"""A version's life on disk: staged in a temp folder, completed (renamed into place), published (the atomic
CURRENT switch), pruned; and the sweep of what a crashed ingest left behind.

Each step is a rename or an atomic write, so a reader sees the old state or the new one, never half of
either: a staged folder is not a version (not ``vNNNNNN``, no manifest until its last write), a pruned one
stops being a version the moment it is renamed to ``.trash-*``. All of it runs under the ingest lock.
A version a reader has pinned (``leases.py``) is never pruned: it is kept until a later prune finds it free.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ragrig.configs.models import ChromaConfig, IndexConfig
from ragrig.retrieval.index import chroma, leases, verified
from ragrig.retrieval.index.files import fsync_dir, fsync_tree, write_atomic
from ragrig.retrieval.index.format import collection_name, collection_version
from ragrig.retrieval.index.layout import Layout


def stage(layout: Layout) -> tuple[str, Path]:
    """The next version's name and a new, empty staging folder to write it in."""
    version = layout.next_version()
    staged = layout.staging_dir(version)
    staged.mkdir(parents=True, exist_ok=False)
    return version, staged


def complete(layout: Layout, version: str, staged: Path) -> Path:
    """Make every file of a fully written staging folder durable, then rename it to the version's folder."""
    fsync_tree(staged)
    final = layout.version_dir(version)
    staged.rename(final)
    fsync_dir(layout.versions_dir)
    return final


def publish(layout: Layout, version: str) -> None:
    """Point CURRENT at a complete version: new readers open it from here on; open ones keep theirs."""
    write_atomic(layout.current_file, (version + "\n").encode())


@dataclass
class Pruned:
    removed: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)  # beyond keep_versions, but pinned by a reader: kept for now


def prune(layout: Layout, cfg: IndexConfig) -> Pruned:
    """Remove the oldest versions beyond ``keep_versions`` (never the current one, never one a reader has
    pinned) and their collections. Each is removed while its lease file is locked exclusively, so no reader
    can pin it halfway; a reader that was waiting for that lock then finds the version gone and reads
    CURRENT again."""
    out = Pruned()
    versions = layout.published_versions()
    current = layout.current_version()
    old = [v for v in versions if v != current][: max(0, len(versions) - cfg.keep_versions)]
    if not old:
        return out
    client = chroma.chroma_client(cfg.chroma, layout.chroma_dir)
    for v in old:
        with leases.exclusive(layout.index_dir, v) as free:
            if not free:
                out.in_use.append(v)
                continue
            trash = layout.trash_dir(v)
            layout.version_dir(v).rename(trash)  # no longer a published version from here on
            chroma.delete_collection(client, collection_name(layout.key, v))
            shutil.rmtree(trash, ignore_errors=True)
            leases.remove(layout.index_dir, v)
            verified.record_file(layout.verified_dir, layout.version_dir(v)).unlink(missing_ok=True)
        out.removed.append(v)
    return out


def sweep_leftovers(layout: Layout, cfg: ChromaConfig) -> list[str]:
    """Remove what a crashed ingest left behind: staging and trash folders, and collections of this index
    that belong to no published version. Returns their names."""
    removed: list[str] = []
    for p in layout.leftovers():
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p.name)
    published = set(layout.published_versions())
    for v in leases.lease_versions(layout.index_dir):  # lease files of versions gone (a reader raced a prune)
        if v not in published:
            with leases.exclusive(layout.index_dir, v) as free:
                if free:
                    leases.remove(layout.index_dir, v)
    if layout.chroma_dir.exists() or cfg.mode == "http":
        client = chroma.chroma_client(cfg, layout.chroma_dir)
        for name in chroma.list_collections(client):
            version = collection_version(layout.key, name)
            if version is not None and version not in published:
                chroma.delete_collection(client, name)
                removed.append(name)
    return removed
