"""Vectors cached by (model id, chunk search-text sha256), so an unchanged chunk is never embedded twice:
across runs, and across chunking configs that produce the same text. Float32 blobs in SQLite (no pickle).

A cached vector is verified before it is used (``get_checked``): its checksum (sha256 over model, text sha, dim
and the blob, written with it), its length, finite values, a non-zero norm and, for a normalising model, a unit
norm. A row that fails is rejected with the reason (ingest re-embeds it and says so), never used: a cache
overwritten with zeros or NaNs would otherwise build an index that answers with unrelated sections."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from ragrig.retrieval.cache.sqlite import IN_BATCH, SqliteCache, corrupt
from ragrig.retrieval.vector_check import NORM_TOLERANCE, check_vector, verdicts

__all__ = ["NORM_TOLERANCE", "EmbeddingCache", "check_vector", "checksum"]


def checksum(model: str, sha: str, dim: int, blob: bytes) -> str:
    h = hashlib.sha256(f"{model}\0{sha}\0{dim}\0".encode())
    h.update(blob)
    return h.hexdigest()[:32]


class EmbeddingCache(SqliteCache):
    """SQLite table (model, sha256) -> float32 vector and its checksum. Safe for one writer and many readers."""

    TABLE = "vectors"
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS vectors (model TEXT, sha TEXT, dim INTEGER, vec BLOB, sum TEXT, "
        "PRIMARY KEY (model, sha))"
    )

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        with self._guard():  # a cache written before checksums: add the column (its rows are checked by value)
            cols = {row[1] for row in self._db.execute("PRAGMA table_info(vectors)")}
            if "sum" not in cols:
                try:
                    self._db.execute("ALTER TABLE vectors ADD COLUMN sum TEXT")
                    self._db.commit()
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc):
                        raise corrupt(path, exc) from None

    def get_checked(self, model: str, shas: Sequence[str], dim: int | None = None, normalized: bool = False,
                    ) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
        """(verified vectors by sha, rejected shas with the reason, shas of rows with no checksum yet that
        passed the value checks: the caller may re-put them to give them one)."""
        good: dict[str, np.ndarray] = {}
        bad: dict[str, str] = {}
        unsummed: list[str] = []
        uniq = list(dict.fromkeys(shas))
        read: list[tuple[str, int, bytes, str | None, np.ndarray]] = []
        with self._guard():
            for i in range(0, len(uniq), IN_BATCH):
                part = uniq[i : i + IN_BATCH]
                q = (f"SELECT sha, dim, vec, sum FROM vectors WHERE model=? AND sha IN "
                     f"({','.join('?' * len(part))})")
                for sha, row_dim, blob, stored in self._db.execute(q, [model, *part]):
                    blob = bytes(blob or b"")
                    if len(blob) % 4:
                        bad[sha] = "a torn row"
                        continue
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape[0] != row_dim:
                        bad[sha] = "a torn row"
                        continue
                    read.append((sha, int(row_dim), blob, stored, vec))
        for (sha, row_dim, blob, stored, vec), why in zip(read, verdicts([r[4] for r in read], dim, normalized)):
            if why is None and stored is not None and stored != checksum(model, sha, row_dim, blob):
                why = "checksum mismatch"  # a plausible vector, but not the one written
            if why is not None:
                bad[sha] = why
                continue
            good[sha] = vec
            if stored is None:
                unsummed.append(sha)
        return good, bad, unsummed

    def get_many(self, model: str, shas: Sequence[str], dim: int | None = None,
                 normalized: bool = False) -> dict[str, np.ndarray]:
        """The verified vectors among ``shas`` (a row that fails verification is a miss)."""
        return self.get_checked(model, shas, dim, normalized)[0]

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = []
        for sha, v in items:
            blob = np.asarray(v, dtype=np.float32).tobytes()
            dim = int(np.asarray(v).shape[0])
            rows.append((model, sha, dim, blob, checksum(model, sha, dim, blob)))
        with self._guard():
            self._db.executemany("INSERT OR REPLACE INTO vectors (model, sha, dim, vec, sum) VALUES (?, ?, ?, ?, ?)",
                                 rows)
            self._db.commit()

    def count(self, model: str | None = None) -> int:
        with self._guard():
            if model is None:
                return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM vectors WHERE model=?", [model]).fetchone()[0])
