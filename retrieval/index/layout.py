"""Where state lives under the ragrig home, and the small file primitives that keep it consistent.

    <home>/cache/embeddings.sqlite         vectors keyed by (model id, text sha256)
    <home>/cache/extract.sqlite            extracted Markdown keyed by (content sha256, extractor)
    <home>/indexes/<key>/CURRENT           the published version's name, switched atomically
    <home>/indexes/<key>/versions/vNNNNNN/ manifest.json (written last), chunks, documents, bm25/, keywords
    <home>/indexes/<key>/chroma/           embedded Chroma store, one collection per version
    <home>/indexes/<key>/ingest.lock       held by the one ingest allowed at a time
    <home>/mlflow/                         MLflow sqlite store and artifacts
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragrig.configs.errors import LockedError
from ragrig.configs.models import RagrigConfig

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
        self.mlflow_dir = self.home / "mlflow"

    def version_dir(self, version: str) -> Path:
        return self.versions_dir / version

    def collection_name(self, version: str) -> str:
        return f"{self.key}-{version}"

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
        out = [p.name for p in self.versions_dir.iterdir() if VERSION_RE.match(p.name) and (p / "manifest.json").is_file()]
        return sorted(out)

    def next_version(self) -> str:
        nums = [0]
        if self.versions_dir.is_dir():
            for p in self.versions_dir.iterdir():
                m = re.search(r"v(\d{6})$", p.name)
                if m:
                    nums.append(int(m.group(1)))
        return f"v{max(nums) + 1:06d}"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file, fsync, rename over ``path``: readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, sort_keys=True).encode("utf-8"))


@contextmanager
def ingest_lock(lock_file: Path, wait_s: float = 0.0) -> Iterator[None]:
    """An exclusive advisory lock (released by the OS if the holder dies). Waits up to ``wait_s``."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fh = open(lock_file, "a+")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                fh.close()
                raise LockedError(
                    f"another ingest is running on this index ({holder}; lock {lock_file}); "
                    "wait for it to finish or pass --wait SECONDS"
                ) from None
            time.sleep(0.2)
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        fh.flush()
        yield
    finally:
        fh.seek(0)
        fh.truncate()
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()
