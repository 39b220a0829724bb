"""Extracted documents cached by (content sha256, extractor settings), so sweeps never re-run docling.

An entry is served only when it proves it was made from the bytes its key names: it records the sha256 of
the bytes the extraction read (``source_sha256``, which must equal the key) and of its own Markdown
(``markdown_sha256``). An entry without them (written before they existed, when an edit during an ingest
could store one file's text under another's hash), or whose Markdown no longer matches, is a miss, and is
replaced by the next extraction.
"""

from __future__ import annotations

import json

from ragrig.retrieval.cache.sqlite import SqliteCache
from ragrig.retrieval.documents import Document, sha256_text


class ExtractCache(SqliteCache):
    TABLE = "docs"
    SCHEMA = "CREATE TABLE IF NOT EXISTS docs (sha TEXT, extractor TEXT, body TEXT, PRIMARY KEY (sha, extractor))"

    def get(self, sha: str, extractor: str, doc_id: str) -> Document | None:
        with self._guard():
            row = self._db.execute("SELECT body FROM docs WHERE sha=? AND extractor=?", (sha, extractor)).fetchone()
        if row is None:
            return None
        try:
            d = json.loads(row[0])
            if d.get("source_sha256") != sha or d.get("markdown_sha256") != sha256_text(d["markdown"]):
                return None  # not provably the extraction of these bytes: never served
            return Document(doc_id=doc_id, sha256=sha, format=d["format"], markdown=d["markdown"],
                            metadata=d["metadata"], warnings=d["warnings"], extractor=extractor)
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            return None

    def put(self, doc: Document, extractor: str) -> None:
        """Store ``doc`` under ``doc.sha256``, which must be the hash of the bytes it was extracted from."""
        body = json.dumps({
            "format": doc.format, "markdown": doc.markdown, "metadata": doc.metadata, "warnings": doc.warnings,
            "source_sha256": doc.sha256, "markdown_sha256": sha256_text(doc.markdown),
        })
        with self._guard():
            self._db.execute("INSERT OR REPLACE INTO docs VALUES (?, ?, ?)", (doc.sha256, extractor, body))
            self._db.commit()
