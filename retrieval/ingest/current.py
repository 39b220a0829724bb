"""Whether an ingest may keep the published version: its files checked against the manifest (``index/verify.py``),
its vectors' values, and whether it can serve this config as it should (``outdated``); ``verify_published``
records what they say in the run's stats (``IngestPipeline.verify_current`` is the stage)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.index import hnsw
from ragrig.retrieval.index.chroma import writes_collection
from ragrig.retrieval.index.format import read_manifest
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.vectors import search_kind, vectors_problem
from ragrig.retrieval.index.verify import verify_version
from ragrig.retrieval.ingest.stats import IngestStats

log = logging.getLogger("ragrig.retrieval.ingest.pipeline")  # the run's warnings, as before this function moved


def verify_published(cfg: RagrigConfig, layout: Layout, stats: IngestStats,
                     restore_store: Callable[[], bool]) -> str | None:
    """The published version an ingest may diff against and keep, checked against its manifest (file hashes,
    counts, the Chroma collection, its stored vectors' values as ``health`` checks them): None when there is
    none, or when it is damaged (a CURRENT naming a missing version, a garbage manifest, a truncated table, a
    deleted store, NaN or zero vector rows an earlier build published) or outdated, in which case the run
    rebuilds it from the corpus (the caches make that cheap) and ``stats`` says so."""
    current = layout.current_version()
    if current is None:
        if layout.current_file.exists():
            _repairing(stats, layout.key, "CURRENT", f"{layout.current_file} does not name a version")
        return None
    problem = damage(cfg, layout, current, restore_store)
    if problem:
        _repairing(stats, layout.key, current, problem)
        return None
    why = outdated(cfg, layout, current)
    if why:
        stats.warnings.append(f"published version {current} {why}: writing a new version "
                              "(unchanged chunks come from the embedding cache)")
        log.warning("index %s: %s %s; writing a new version", layout.key, current, why)
        return None
    return current


def _repairing(stats: IngestStats, key: str, version: str, problem: str) -> None:
    stats.repaired = version
    stats.warnings.append(f"published version {version} is damaged ({problem}): rebuilding it from the corpus "
                          "(unchanged documents come from the caches)")
    log.warning("index %s: %s is damaged (%s); rebuilding", key, version, problem)


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
    n = manifest["counts"]["chunks"]
    if search_kind(vs, n) == "hnsw" and stored.get("hnsw") != hnsw.params(vs.hnsw, n):
        return "has no HNSW graph built with this config's parameters"
    if writes_collection(cfg) and manifest["chroma"].get("collection") is None:
        return "has no Chroma collection, which this config's index settings ask for"
    return None
