"""Extracted documents cached by (content sha256, extractor settings), so sweeps never re-run docling."""

from __future__ import annotations

import json

from ragrig.retrieval.cache.sqlite import SqliteCache
from ragrig.retrieval.documents import Document


class ExtractCache(SqliteCache):
    TABLE = "docs"
    SCHEMA = "CREATE TABLE IF NOT EXISTS docs (sha TEXT, extractor TEXT, body TEXT, PRIMARY KEY (sha, extractor))"

    def get(self, sha: str, extractor: str, doc_id: str) -> Document | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM docs WHERE sha=? AND extractor=?", (sha, extractor)).fetchone()
        if row is None:
            return None
        try:
            d = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return Document(doc_id=doc_id, sha256=sha, format=d["format"], markdown=d["markdown"], metadata=d["metadata"],
                        warnings=d["warnings"], extractor=extractor)

    def put(self, doc: Document, extractor: str) -> None:
        body = json.dumps(
            {"format": doc.format, "markdown": doc.markdown, "metadata": doc.metadata, "warnings": doc.warnings}
        )
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO docs VALUES (?, ?, ?)", (doc.sha256, extractor, body))
            self._db.commit()
