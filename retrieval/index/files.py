"""File primitives that keep on-disk state consistent: atomic writes (``retrieval/atomic.py``), directory fsync,
the ingest lock."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragrig.configs.errors import LockedError
from ragrig.retrieval.atomic import fsync_dir, write_atomic  # the one atomic writer (mode, symlinks)


def fsync_tree(root: Path) -> None:
    """fsync every file below ``root``, then every directory, deepest first (before renaming ``root`` into place)."""
    dirs = [root]
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        dirs += [Path(dirpath) / d for d in dirnames]
    for d in reversed(dirs):
        fsync_dir(d)


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
