"""A damaged Chroma store (``chroma.sqlite3`` with a bad page: "database disk image is malformed") repaired by
ingest from what the index already has: the store is moved aside (kept for inspection, never deleted), and the
collection of every published version whose own files verify is rebuilt from its ``chunks.jsonl`` and its own
``vectors.npy`` (versions written before they stored vectors: the embedding cache; a vector the cache lacks, or
that fails verification, is embedded again when the version was built with the configured model). Nothing is taken from the corpus, so an unchanged corpus is then "unchanged",
and readers of an older kept version get their collection back too.

Before, the next ingest failed opening the store (exit 1) although ``health`` and ``query`` said that
``ragrig ingest`` rebuilds a damaged version; only ``reset --yes`` recovered, throwing the caches away."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.format import add_chunks, collection_name, read_chunks, read_manifest
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.vectors import read_vectors
from ragrig.retrieval.index.verify import verify_version
from ragrig.retrieval.ingest.embed import embed_with_cache
from ragrig.retrieval.ingest.stats import IngestStats

log = logging.getLogger(__name__)

STORE_FILE = "chroma.sqlite3"


def store_damage(chroma_dir: Path) -> str | None:
    """Why the embedded store's SQLite file is damaged (SQLite's own words), or None when it reads whole.
    Opened read-only; ``PRAGMA quick_check`` reads every page once (run only after an error)."""
    path = chroma_dir / STORE_FILE
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            rows = db.execute("PRAGMA quick_check").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
    return "; ".join(problems[:2]) if problems else None


@dataclass
class Restored:
    moved_to: Path
    rebuilt: list[str] = field(default_factory=list)  # versions whose collection was rebuilt
    embedded: int = 0  # vectors the cache could not give
    lost: list[str] = field(default_factory=list)  # "version: why" for versions left without a collection

    def summary(self, store: Path, damage: str) -> str:
        rebuilt = ", ".join(self.rebuilt) or "none"
        lost = f"; not rebuilt: {'; '.join(self.lost)}" if self.lost else ""
        return (f"the Chroma store {store} is damaged ({damage}): moved it aside to {self.moved_to.name} (delete it "
                f"when done) and rebuilt the collections of {rebuilt} from their chunks and stored vectors (or the "
                f"embedding cache) "
                f"({self.embedded} vector(s) embedded again){lost}")


def restore_store(cfg: RagrigConfig, layout: Layout, embedder: Embedder, cache: EmbeddingCache) -> Restored:
    """Move the damaged embedded store aside and rebuild each published version's collection in a new one."""
    chroma.forget_client(cfg.index.chroma, layout.chroma_dir)  # this process's client serves the damaged file
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    moved = layout.chroma_dir.with_name(f"{layout.chroma_dir.name}.damaged-{stamp}")
    n = 1
    while moved.exists():
        n += 1
        moved = layout.chroma_dir.with_name(f"{layout.chroma_dir.name}.damaged-{stamp}-{n}")
    layout.chroma_dir.rename(moved)
    out = Restored(moved_to=moved)
    client = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)  # a new, empty store
    for version in layout.published_versions():
        vdir = layout.version_dir(version)
        problems = verify_version(cfg, vdir, layout.chroma_dir, chroma=False)
        if problems:
            out.lost.append(f"{version}: {problems[0]}")
            continue
        manifest = read_manifest(vdir)
        if manifest["chroma"].get("collection") is None:  # it wrote none: nothing of it was in the store
            continue
        chunks = read_chunks(vdir)
        model_id, dim = manifest["embedding"]["model_id"], int(manifest["embedding"]["dim"])
        shas = [c.sha256 for c in chunks]
        if isinstance(manifest.get("vectors"), dict):  # the version's own vectors, verified with its files above
            vectors = np.asarray(read_vectors(vdir), dtype=np.float32)
        elif model_id == embedder.id:
            vectors, new = embed_with_cache(embedder, cache, [c.search_text for c in chunks], shas) if chunks \
                else (np.zeros((0, dim), dtype=np.float32), 0)
            out.embedded += new
        else:  # built with other weights: only the cache can give its vectors
            got = cache.get_many(model_id, shas, dim=dim)
            if len(got) < len(set(shas)):
                out.lost.append(f"{version}: built with {model_id}, {len(set(shas)) - len(got)} of its vectors are "
                                "not in the cache")
                continue
            vectors = np.vstack([got[s] for s in shas]) if chunks else np.zeros((0, dim), dtype=np.float32)
        col = chroma.create_collection(client, collection_name(layout.key, version), dim)
        if chunks:
            add_chunks(col, chunks, vectors)
        out.rebuilt.append(version)
    return out


def restore_if_damaged(cfg: RagrigConfig, layout: Layout, embedder: Embedder, cache: Callable[[], EmbeddingCache],
                       stats: IngestStats) -> bool:
    """After an error from the embedded Chroma store: when its SQLite file is damaged, move it aside and rebuild
    every published version's collection (``restore_store``; ``cache()`` opens the embedding cache), with a
    warning in ``stats`` saying so. False when the store is not damaged (the error is something else)."""
    if cfg.index.chroma.mode != "embedded":
        return False
    damage = store_damage(layout.chroma_dir)
    if damage is None:
        return False
    note = restore_store(cfg, layout, embedder, cache()).summary(layout.chroma_dir, damage)
    stats.warnings.append(note)
    logging.getLogger("ragrig.retrieval.ingest.pipeline").warning("index %s: %s", layout.key, note)
    return True
