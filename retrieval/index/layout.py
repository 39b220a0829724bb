"""Where state lives under the ragrig home (the file primitives that keep it consistent are ``files.py``).

    <home>/cache/embeddings.sqlite         vectors keyed by (model id, text sha256)
    <home>/cache/extract.sqlite            extracted Markdown keyed by (content sha256, extractor)
    <home>/indexes/<key>/CURRENT           the published version's name, switched atomically
    <home>/indexes/<key>/versions/vNNNNNN/ one complete version (its files: format.py)
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


class Layout:
    def __init__(self, cfg: RagrigConfig) -> None:
        self.home = cfg.home_dir
        self.key = cfg.index_key()
        self.index_dir = self.home / "indexes" / self.key
        self.versions_dir = self.index_dir / "versions"
        self.current_file = self.index_dir / "CURRENT"
        self.chroma_dir = self.index_dir / "chroma"
        self.lock_file = self.index_dir / "ingest.lock"
        self.cache_dir = self.home / "cache"
        self.embedding_cache = self.cache_dir / "embeddings.sqlite"
        self.extract_cache = self.cache_dir / "extract.sqlite"

    def version_dir(self, version: str) -> Path:
        return self.versions_dir / version

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
        nums = [0]
        if self.versions_dir.is_dir():
            for p in self.versions_dir.iterdir():
                m = re.search(r"v(\d{6})$", p.name)
                if m:
                    nums.append(int(m.group(1)))
        return f"v{max(nums) + 1:06d}"
