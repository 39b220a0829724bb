"""Fixtures of the index tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.retrieval.documents import Document
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document, whitespace_counter

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def sample_texts() -> list[str]:
    """The search texts of the sample corpus's Markdown files, chunked as ingest does (a word-count window)."""
    texts = []
    for path in sorted((ROOT / "datasets" / "sample").rglob("*.md")):
        doc = Document(path.relative_to(ROOT).as_posix(), "", "md", path.read_text(encoding="utf-8"))
        texts += [c.search_text for c in chunk_document(doc, ChunkingParams(), whitespace_counter)]
    return texts
