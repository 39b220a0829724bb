"""What the persistent caches share: one SQLite file in WAL mode (one writer, many readers), one connection
used from any thread behind a lock, rows keyed by a content sha256 in a ``sha`` column, deletion by sha.

A damaged cache file (not a database, a corrupt page) is a ``CacheCorruptError`` naming the file and saying
that deleting it is safe: a cache holds nothing that the corpus and the model cannot make again.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ragrig.configs.errors import RagrigError

IN_BATCH = 900  # below SQLite's default limit of 999 host parameters per statement


class CacheCorruptError(RagrigError):
    """A cache's SQLite file cannot be read or written."""


def corrupt(path: Path, exc: BaseException) -> CacheCorruptError:
    return CacheCorruptError(
        f"cache {path} is damaged ({type(exc).__name__}: {exc}); it is only a cache, so deleting it is safe: "
        f"rm {path}* and run again (what it held is rebuilt from the corpus)"
    )


class SqliteCache:
    TABLE = ""
    SCHEMA = ""  # CREATE TABLE IF NOT EXISTS {TABLE} (... sha TEXT ...)

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # a commit without an fsync (WAL: the file is never left damaged; a power cut may only lose the last
            # commits, which a cache makes again). An ingest commits the embedding cache once a batch: ~15 ms each
            # with the fsync, 2.9 s of a 100k-chunk ingest's embed stage
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(self.SCHEMA)
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise corrupt(path, exc) from None
        self._inode = path.stat().st_ino

    @property
    def stale(self) -> bool:
        """The file at ``path`` is no longer the one this connection opened (deleted or replaced): reopen."""
        try:
            return self.path.stat().st_ino != self._inode
        except FileNotFoundError:
            return True

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """The connection lock, with SQLite's "database disk image is malformed" and the like turned into
        one clear error (a locked database stays what it is: sqlite3.OperationalError after the timeout)."""
        with self._lock:
            try:
                yield
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise
                raise corrupt(self.path, exc) from None
            except sqlite3.DatabaseError as exc:
                raise corrupt(self.path, exc) from None

    def delete(self, shas: Iterable[str]) -> int:
        """Delete every entry for these content hashes (under any model or extractor); returns the rows gone."""
        items = sorted(set(shas))
        n = 0
        with self._guard():
            for i in range(0, len(items), IN_BATCH):
                part = items[i : i + IN_BATCH]
                sql = f"DELETE FROM {self.TABLE} WHERE sha IN ({','.join('?' * len(part))})"
                n += self._db.execute(sql, part).rowcount
            self._db.commit()
        return n

    def close(self) -> None:
        with self._lock:
            self._db.close()
