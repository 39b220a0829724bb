"""The cheap check of one published version that ingest runs before it keeps a version and a reader runs
before it serves one: the manifest is usable, every file it lists is there with its sha256, and the Chroma
collection holds as many vectors as the manifest has chunks. Versions written before the manifest listed
its files are checked by their tables' counts and id hashes instead.

``health`` runs this and then the deep checks (every table parsed, BM25 loaded, Chroma ids compared).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.file_stamps import stamp
from ragrig.retrieval.index import verified
from ragrig.retrieval.index.format import (
    BM25_DIR,
    CHUNKS,
    DOCUMENTS,
    MANIFEST,
    file_sha256,
    manifest_problem,
    read_manifest,
)


def load_manifest(version_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(manifest, None) or (None, what is wrong with it)."""
    try:
        manifest = read_manifest(version_dir)
    except FileNotFoundError:
        return None, f"{MANIFEST} is missing"
    except (OSError, ValueError) as exc:
        return None, f"{MANIFEST} is unreadable ({type(exc).__name__}: {str(exc)[:120]})"
    problem = manifest_problem(manifest)
    if problem is not None:
        return None, f"{MANIFEST} is damaged: {problem}"
    return manifest, None


def check_files(version_dir: Path, manifest: dict[str, Any], stamps: Path | None = None) -> list[str]:
    """Every file the manifest lists, present and with its sha256 (older manifests: the tables' row counts).
    ``stamps``: the index's records of files already checked on this machine (``verified.py``): a file whose
    identity is the one recorded with the sha256 the manifest lists is not hashed again."""
    problems: list[str] = []
    for name in (DOCUMENTS, CHUNKS):
        if not (version_dir / name).is_file():
            problems.append(f"{name} is missing")
    if not (version_dir / BM25_DIR).is_dir():
        problems.append(f"{BM25_DIR}/ is missing")
    files = manifest.get("files")
    if files is None:
        return problems or _check_tables(version_dir, manifest)
    trusted = verified.known(stamps, version_dir) if stamps is not None else {}
    checked: dict[str, list] = {}
    for rel, sha in sorted(files.items()):
        p = version_dir / rel
        if not p.is_file():
            if p.parent.is_dir():  # a missing folder (bm25/) is named once, above
                problems.append(f"{rel} is missing")
            continue
        try:
            before = stamp(p)
            if trusted.get(rel) == [sha, *before]:
                checked[rel] = trusted[rel]
                continue
            if file_sha256(p) != sha:
                problems.append(f"{rel} does not match the manifest (sha256 differs: damaged or edited)")
            elif stamp(p) == before:  # unchanged while it was hashed
                checked[rel] = [sha, *before]
        except OSError as exc:
            problems.append(f"{rel} is unreadable ({exc.strerror or exc})")
    if stamps is not None and not problems and len(checked) == len(files) and checked != trusted:
        verified.record(stamps, version_dir, checked)
    return list(dict.fromkeys(problems))


def _check_tables(version_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """A version without ``files`` in its manifest (written before they were listed): the tables' row counts
    against the manifest, counted as lines (a reader parses the tables anyway; ``health`` compares ids)."""
    problems: list[str] = []
    for name, key in ((CHUNKS, "chunks"), (DOCUMENTS, "documents")):
        try:
            with open(version_dir / name, "rb") as fh:
                rows = sum(1 for line in fh if line.strip())
        except OSError as exc:
            problems.append(f"{name} is unreadable ({exc.strerror or exc})")
            continue
        if rows != manifest["counts"][key]:
            problems.append(f"{name} has {rows} rows, the manifest {manifest['counts'][key]} {key}")
    return problems


def check_collection(cfg: RagrigConfig, chroma_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """The version's Chroma collection exists and holds one vector per chunk (nothing to check when the version
    wrote none)."""
    from ragrig.retrieval.index.chroma import chroma_client, forget_client

    name = manifest["chroma"]["collection"]
    if name is None:
        return []
    if cfg.index.chroma.mode == "embedded" and not chroma_dir.is_dir():
        forget_client(cfg.index.chroma, chroma_dir)  # a client opened before the folder went serves stale state
        return [f"the Chroma store {chroma_dir} is missing (collection {name})"]
    try:
        col = chroma_client(cfg.index.chroma, chroma_dir).get_collection(name)
        n = int(col.count())
    except Exception as exc:
        return [f"Chroma collection {name} is missing or unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
    want = manifest["counts"]["chunks"]
    return [] if n == want else [f"Chroma collection {name} holds {n} vectors, the manifest {want} chunks"]


def verify_version(cfg: RagrigConfig, version_dir: Path, chroma_dir: Path, *, chroma: bool = True,
                   stamps: Path | None = None) -> list[str]:
    """Everything that is wrong with a version, cheaply (no table parsed when the manifest lists its files):
    an empty list means it can be kept and served. ``stamps``: see ``check_files``."""
    if not version_dir.is_dir():
        return [f"the version folder {version_dir} is missing"]
    manifest, problem = load_manifest(version_dir)
    if manifest is None:
        return [problem or "manifest unusable"]
    problems = check_files(version_dir, manifest, stamps)
    if chroma and not problems:
        problems += check_collection(cfg, chroma_dir, manifest)
    return problems
