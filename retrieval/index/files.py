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
    """An exclusive advisory lock (released by the OS if the holder dies). Waits up to ``wait_s``.

    An index folder that holds nothing but its lock when the lock is released (a first ingest refused: no
    documents, an endpoint down) is removed with it, so a refusal leaves no empty index behind. A waiter that
    was blocked on the removed file finds the path gone or another file there and opens it again: the lock is
    always the file at ``lock_file``, so two holders never exist at once."""
    deadline = time.monotonic() + wait_s
    fh = _locked(lock_file, deadline)
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        fh.flush()
        yield
    finally:
        fh.seek(0)
        fh.truncate()
        _remove_if_alone(lock_file)
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()


def _locked(lock_file: Path, deadline: float) -> Any:
    while True:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fh = open(lock_file, "a+")
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
            now = os.stat(lock_file)
        except FileNotFoundError:
            now = None
        held = os.fstat(fh.fileno())
        if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
            return fh
        fh.close()  # the holder before removed the file (and its empty folder): lock the one there now


def _remove_if_alone(lock_file: Path) -> None:
    """Remove the lock file and its folder when the folder holds nothing else (called while the lock is held)."""
    folder = lock_file.parent
    try:
        if [p.name for p in folder.iterdir()] == [lock_file.name]:
            lock_file.unlink()
            folder.rmdir()
    except OSError:
        pass  # something appeared meanwhile, or a read-only home: the folder stays, as before
