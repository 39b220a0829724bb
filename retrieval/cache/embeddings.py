"""Vectors cached by (model id, chunk search-text sha256), so an unchanged chunk is never embedded twice:
across runs, and across chunking configs that produce the same text. Float32 blobs in SQLite (no pickle)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ragrig.retrieval.cache.sqlite import IN_BATCH, SqliteCache


class EmbeddingCache(SqliteCache):
    """SQLite table (model, sha256) -> float32 vector. Safe for one writer and many readers."""

    TABLE = "vectors"
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS vectors (model TEXT, sha TEXT, dim INTEGER, vec BLOB, PRIMARY KEY (model, sha))"
    )

    def get_many(self, model: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(shas))
        with self._guard():
            for i in range(0, len(uniq), IN_BATCH):
                part = uniq[i : i + IN_BATCH]
                q = f"SELECT sha, dim, vec FROM vectors WHERE model=? AND sha IN ({','.join('?' * len(part))})"
                for sha, dim, blob in self._db.execute(q, [model, *part]):
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape[0] == dim:  # a torn row is a miss, never a wrong vector
                        out[sha] = vec
        return out

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(model, sha, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for sha, v in items]
        with self._guard():
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.commit()

    def count(self, model: str | None = None) -> int:
        with self._guard():
            if model is None:
                return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM vectors WHERE model=?", [model]).fetchone()[0])
