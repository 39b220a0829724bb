"""What the persistent caches share: one SQLite file in WAL mode (one writer, many readers), one connection
used from any thread behind a lock, rows keyed by a content sha256 in a ``sha`` column, deletion by sha."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

IN_BATCH = 900  # below SQLite's default limit of 999 host parameters per statement


class SqliteCache:
    TABLE = ""
    SCHEMA = ""  # CREATE TABLE IF NOT EXISTS {TABLE} (... sha TEXT ...)

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(self.SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()

    def delete(self, shas: Iterable[str]) -> int:
        """Delete every entry for these content hashes (under any model or extractor); returns the rows gone."""
        items = sorted(set(shas))
        n = 0
        with self._lock:
            for i in range(0, len(items), IN_BATCH):
                part = items[i : i + IN_BATCH]
                sql = f"DELETE FROM {self.TABLE} WHERE sha IN ({','.join('?' * len(part))})"
                n += self._db.execute(sql, part).rowcount
            self._db.commit()
        return n

    def close(self) -> None:
        with self._lock:
            self._db.close()
