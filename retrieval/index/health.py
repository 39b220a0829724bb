"""Operator checks on published indexes: versions, counts, model, and cross-store consistency.

A version is consistent when every file it has matches its manifest (sha256), the chunk ids in its chunks
table, its manifest (count and id hash), its BM25 index (document count) and its Chroma collection (ids)
are the same set with no duplicates, its documents table matches the manifest's count and hash, and its
keyword library parses: every file a query or an evaluation reads.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import sha256_text
from ragrig.retrieval.index.format import BM25_DIR, CHUNKS, DOCUMENTS, KEYWORDS, chunk_ids_hash, iter_jsonl
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.leases import Lease
from ragrig.retrieval.index.vectors import vectors_problem
from ragrig.retrieval.index.verify import check_collection, check_files, load_manifest


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
    """Every file a query reads, checked: the manifest's file hashes (``verify.py``), then each table parsed
    and compared with the manifest, the keyword library's shape, BM25 loaded and its size, Chroma's ids."""
    vh = VersionHealth(version, current)
    vdir = layout.version_dir(version)
    manifest, problem = load_manifest(vdir)
    if manifest is None:
        vh.problems.append(problem or "manifest unusable")
        return vh
    vh.model_id = manifest["embedding"]["model_id"]
    vh.documents = int(manifest["counts"]["documents"])
    vh.problems += check_files(vdir, manifest)
    vh.problems += _check_documents(vdir, manifest)
    try:
        ids = [d["chunk_id"] for d in iter_jsonl(vdir / CHUNKS)]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        vh.problems.append(f"chunks table unreadable: {type(exc).__name__}: {str(exc)[:120]}")
        return vh
    vh.chunks = len(ids)
    dups = [i for i, n in Counter(ids).items() if n > 1]
    if dups:
        vh.problems.append(f"{len(dups)} duplicate chunk ids in the chunks table (e.g. {dups[:3]})")
    if manifest["counts"]["chunks"] != len(ids):
        vh.problems.append(f"manifest says {manifest['counts']['chunks']} chunks, the table has {len(ids)}")
    if manifest["chunk_ids_sha256"] != chunk_ids_hash(ids):
        vh.problems.append("chunk ids differ from the manifest's id hash")
    vh.problems += _check_keywords(vdir)
    try:
        from ragrig.retrieval.index.bm25 import Bm25Index

        bm25 = Bm25Index.load(vdir / BM25_DIR, cfg.index.bm25)
        if bm25.size != len(ids):
            vh.problems.append(f"BM25 index has {bm25.size} documents, the table {len(ids)} chunks")
    except Exception as exc:
        vh.problems.append(f"BM25 index unreadable: {type(exc).__name__}: {str(exc)[:120]}")
    vh.problems += [p for p in [vectors_problem(vdir, manifest)] if p]
    vh.problems += _check_store(cfg, layout, manifest, ids)
    vh.problems = list(dict.fromkeys(vh.problems))
    return vh


def _check_store(cfg: RagrigConfig, layout: Layout, manifest: dict[str, Any], ids: list[str]) -> list[str]:
    """The version's Chroma collection, when it wrote one: there, whole, and holding exactly the table's ids."""
    name = manifest["chroma"]["collection"]
    if name is None:  # the version wrote none: nothing to compare
        return []
    store = check_collection(cfg, layout.chroma_dir, manifest)
    if any("holds" not in p for p in store):  # missing: nothing to compare (a count that differs: the ids say how)
        return store
    problems = []
    try:
        from ragrig.retrieval.index.chroma import chroma_client

        got = chroma_client(cfg.index.chroma, layout.chroma_dir).get_collection(name).get(include=[])["ids"]
        if len(got) != len(set(got)):
            problems.append("duplicate ids in the Chroma collection")
        if set(got) != set(ids):
            missing, extra = set(ids) - set(got), set(got) - set(ids)
            problems.append(f"Chroma ids differ from the chunks table: {len(missing)} missing, {len(extra)} extra")
    except Exception as exc:
        problems.append(f"Chroma collection: {exc}")
    return problems


def _check_documents(vdir: Path, manifest: dict[str, Any]) -> list[str]:
    try:
        rows = [f"{d['doc_id']}\t{d['sha256']}" for d in iter_jsonl(vdir / DOCUMENTS)]
    except FileNotFoundError:
        return []  # named by check_files
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"documents table unreadable: {type(exc).__name__}: {str(exc)[:120]}"]
    out = []
    if len(rows) != manifest["counts"]["documents"]:
        out.append(f"manifest says {manifest['counts']['documents']} documents, the table has {len(rows)}")
    if sha256_text("\n".join(rows)) != manifest["documents_sha256"]:
        out.append("documents differ from the manifest's document hash")
    return out


def _check_keywords(vdir: Path) -> list[str]:
    path = vdir / KEYWORDS
    if not path.exists():
        return []  # versions may lack one (an empty library); a listed-but-missing one is named by check_files
    try:
        library = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"keyword library unreadable: {type(exc).__name__}: {str(exc)[:120]}"]
    if not isinstance(library, dict) or not isinstance(library.get("terms"), list):
        return ["keyword library is not a mapping with a 'terms' list"]
    if not all(isinstance(t, dict) and isinstance(t.get("term"), str) for t in library["terms"]):
        return ["keyword library has terms without a 'term' string"]
    return []


def check_index(cfg: RagrigConfig, all_versions: bool = False) -> IndexHealth:
    """The current version (``all_versions``: every kept one), each pinned by a lease while it is checked, so
    a concurrent prune cannot remove it halfway."""
    layout = Layout(cfg)
    current = layout.current_version()
    health = IndexHealth(layout.key, str(layout.index_dir), current)
    if current is None and layout.current_file.exists():
        health.versions.append(VersionHealth("CURRENT", True, problems=[
            f"{layout.current_file} does not name a version (`ragrig ingest` rebuilds the index)"]))
    published = layout.published_versions()
    if current is not None and current not in published:
        health.versions.append(VersionHealth(current, True, problems=[
            "CURRENT names a version that is missing or incomplete (`ragrig ingest` rebuilds it)"]))
    for v in published:
        if all_versions or v == current:
            lease = Lease(layout.index_dir, v)
            try:
                if layout.version_dir(v).is_dir():  # else pruned before the lease was taken
                    health.versions.append(check_version(cfg, layout, v, v == current))
            finally:
                lease.release()
    health.leftovers += [p.name for p in layout.leftovers()]
    return health
