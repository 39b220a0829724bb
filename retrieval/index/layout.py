"""Where state lives under the ragrig home (the file primitives that keep it consistent are ``files.py``).

    <home>/cache/embeddings.sqlite         vectors keyed by (model id, text sha256)
    <home>/cache/extract.sqlite            extracted Markdown keyed by (content sha256, extractor)
    <home>/indexes/<key>/CURRENT           the published version's name, switched atomically
    <home>/indexes/<key>/versions/vNNNNNN/ one complete version (its files: format.py)
    <home>/indexes/<key>/versions/.tmp-vNNNNNN/, .trash-vNNNNNN/    being written, being pruned
    <home>/indexes/<key>/chroma/           embedded Chroma store, one collection per version
    <home>/indexes/<key>/ingest.lock       held by the one ingest allowed at a time
    (<home>/mlflow/ is MLflow's default store: eval/mlflow_log.py owns that path.)
"""

from __future__ import annotations

import re
from pathlib import Path

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.index.format import MANIFEST

VERSION_RE = re.compile(r"^v(\d{6})$")
VERSIONS = "versions"
STAGING, TRASH = ".tmp-", ".trash-"  # prefixes of folders that are not, or no longer, versions


def version_dirs(index_dir: Path) -> list[Path]:
    """Every folder under an index's ``versions/``: complete, being written, or being pruned."""
    vdir = index_dir / VERSIONS
    return sorted(p for p in vdir.iterdir() if p.is_dir()) if vdir.is_dir() else []


class Layout:
    def __init__(self, cfg: RagrigConfig) -> None:
        self.home = cfg.home_dir
        self.key = cfg.index_key()
        self.indexes_dir = self.home / "indexes"
        self.index_dir = self.indexes_dir / self.key
        self.versions_dir = self.index_dir / VERSIONS
        self.current_file = self.index_dir / "CURRENT"
        self.chroma_dir = self.index_dir / "chroma"
        self.lock_file = self.index_dir / "ingest.lock"
        self.verified_dir = self.index_dir / "verified"  # files of a version already checked here (verified.py)
        self.views_file = self.index_dir / "views.json"  # the fused views embedded for a version (ingest/views.py)
        self.cache_dir = self.home / "cache"
        self.embedding_cache = self.cache_dir / "embeddings.sqlite"
        self.extract_cache = self.cache_dir / "extract.sqlite"

    def version_dir(self, version: str) -> Path:
        return self.versions_dir / version

    def staging_dir(self, version: str) -> Path:
        """Where a version is written until it is complete."""
        return self.versions_dir / f"{STAGING}{version}"

    def trash_dir(self, version: str) -> Path:
        """Where a pruned version goes before it is deleted."""
        return self.versions_dir / f"{TRASH}{version}"

    def leftovers(self) -> list[Path]:
        """Staging and trash folders: what an interrupted ingest left behind (the next one sweeps them)."""
        return [p for p in version_dirs(self.index_dir) if p.name.startswith((STAGING, TRASH))]

    def other_index_dirs(self) -> list[Path]:
        """The index folders of the other configs under the same home."""
        if not self.indexes_dir.is_dir():
            return []
        return sorted(p for p in self.indexes_dir.iterdir() if p != self.index_dir and p.is_dir())

    def current_version(self) -> str | None:
        try:
            name = self.current_file.read_text().strip()
        except FileNotFoundError:
            return None
        return name if VERSION_RE.match(name) else None

    def published_versions(self) -> list[str]:
        """Complete versions (manifest present), oldest first."""
        if not self.versions_dir.is_dir():
            return []
        out = [p.name for p in self.versions_dir.iterdir() if VERSION_RE.match(p.name) and (p / MANIFEST).is_file()]
        return sorted(out)

    def next_version(self) -> str:
        """One past the highest version number present, staging and trash folders included, and the one CURRENT
        names (its folder may be gone): a number is never reused."""
        nums = [0]
        if self.versions_dir.is_dir():
            for p in self.versions_dir.iterdir():
                m = re.search(r"v(\d{6})$", p.name)
                if m:
                    nums.append(int(m.group(1)))
        current = self.current_version()
        if current is not None:
            nums.append(int(current[1:]))
        return f"v{max(nums) + 1:06d}"
