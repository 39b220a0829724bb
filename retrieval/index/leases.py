"""Reader leases: a reader pins the version it opened, so a prune never removes a version under it.

A lease is a shared ``flock`` on ``<index>/leases/<version>.lock``, held for as long as the reader keeps the
version open (the OS drops it when the process dies, so a lease never goes stale). ``prune`` takes the same
lock exclusively and without waiting before it removes a version; when a reader holds it, that version is
kept and a later ingest prunes it. A reader takes its lease and then checks that the version is still
there: when a prune won the race, the version is gone and the reader reads ``CURRENT`` again.
"""

from __future__ import annotations

import fcntl
import logging
import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LEASES = "leases"
log = logging.getLogger(__name__)


def lease_file(index_dir: Path, version: str) -> Path:
    return index_dir / LEASES / f"{version}.lock"


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


class Lease:
    """A shared lock on one version's lease file, released by ``release()``, by garbage collection, or by
    the process ending."""

    def __init__(self, index_dir: Path, version: str) -> None:
        self.version = version
        self.path = lease_file(index_dir, version)
        try:
            fd = _open(self.path)
        except OSError as exc:  # a read-only index (a mounted image): nothing can prune it, so nothing to pin
            log.debug("no reader lease on %s (%s): reading unpinned", self.path, exc.strerror or exc)
            self._finalizer = weakref.finalize(self, lambda: None)
            self._finalizer.detach()
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a prune holds it (a rename and a delete)
        except BaseException:
            os.close(fd)
            raise
        self._finalizer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        self._finalizer()  # closing the descriptor drops the lock; idempotent

    @property
    def held(self) -> bool:
        return self._finalizer.alive


@contextmanager
def exclusive(index_dir: Path, version: str) -> Iterator[bool]:
    """Try to take ``version``'s lease file exclusively, without waiting: yields True when no reader holds the
    version (it stays locked until the block ends, so no reader can pin it meanwhile), False when one does."""
    path = lease_file(index_dir, version)
    fd = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def remove(index_dir: Path, version: str) -> None:
    """Remove a version's lease file (call under ``exclusive``, once the version is gone)."""
    try:
        lease_file(index_dir, version).unlink()
    except FileNotFoundError:
        pass


def lease_versions(index_dir: Path) -> list[str]:
    """The versions that have a lease file (held or not)."""
    d = index_dir / LEASES
    return sorted(p.stem for p in d.glob("v*.lock")) if d.is_dir() else []
