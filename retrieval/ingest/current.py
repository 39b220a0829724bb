"""Whether an ingest may keep the published version: its files checked against the manifest (``index/verify.py``),
its vectors' values, and whether it can serve this config as it should (``outdated``). Pure functions of the
config and the layout; ``IngestPipeline.verify_current`` records what they say and decides."""

from __future__ import annotations

from collections.abc import Callable

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.index import hnsw
from ragrig.retrieval.index.chroma import writes_collection
from ragrig.retrieval.index.format import read_manifest
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.vectors import search_kind, vectors_problem
from ragrig.retrieval.index.verify import verify_version


def damage(cfg: RagrigConfig, layout: Layout, version: str, restore_store: Callable[[], bool]) -> str | None:
    """What is wrong with the published ``version`` (None: nothing): its files against the manifest (counts,
    hashes, the Chroma collection: ``restore_store()`` is tried once when the collection is the problem and
    says whether it rebuilt a damaged store), then its stored vectors' values (NaN or zero rows, width 0)."""
    vdir = layout.version_dir(version)
    problems = verify_version(cfg, vdir, layout.chroma_dir)
    if problems and any(p.startswith("Chroma collection") for p in problems) and restore_store():
        problems = verify_version(cfg, vdir, layout.chroma_dir)
    if not problems:
        bad = vectors_problem(vdir, read_manifest(vdir))
        problems = [bad] if bad else []
    if not problems:
        return None
    return "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")


def outdated(cfg: RagrigConfig, layout: Layout, version: str) -> str | None:
    """Why a whole published version cannot serve this config as it should: written before versions stored
    their vectors (so only Chroma's build-dependent search could answer), or without the HNSW graph this
    config's vector search needs (readers would rebuild it on every open), or without the Chroma collection
    it asks for (``chroma.writes_collection``)."""
    manifest = read_manifest(layout.version_dir(version))
    stored = manifest.get("vectors")
    if not isinstance(stored, dict):
        return "was written before versions stored their vectors (its vector search would vary by build)"
    vs = cfg.index.vector_search
    if search_kind(vs, manifest["counts"]["chunks"]) == "hnsw" and stored.get("hnsw") != hnsw.params(vs.hnsw):
        return "has no HNSW graph built with this config's parameters"
    if writes_collection(cfg) and manifest["chroma"].get("collection") is None:
        return "has no Chroma collection, which this config's index settings ask for"
    return None
