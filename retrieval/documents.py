"""The data shapes that flow through ingestion and retrieval (plain dataclasses, no behaviour worth a class)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

HEADER_SEP = " > "
FORMATS = {  # a corpus file's suffix -> its document format (``metadata["format"]``; BEIR records are "beir")
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".docx": "docx",
    ".pptx": "pptx",
    ".pdf": "pdf",
    ".txt": "txt",
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SourceDoc:
    """A document found in the corpus, before extraction. ``sha256`` is over its raw content."""

    doc_id: str  # path relative to the corpus root (posix), or the BEIR _id
    sha256: str
    format: str  # md | html | docx | pptx | pdf | beir
    size: int
    path: Path | None = None  # absolute file path (a BEIR record: the corpus's JSONL file)
    title: str | None = None  # BEIR only, when given in memory (discovery gives ``offset`` instead)
    text: str | None = None  # BEIR only: the record's text, when given in memory
    offset: int | None = None  # BEIR only: where the record's line starts in ``path`` (read back at extraction)


@dataclass
class Document:
    """An extracted document: Markdown text plus metadata (frontmatter, title, format)."""

    doc_id: str
    sha256: str
    format: str
    markdown: str
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extractor: str = ""  # the extraction settings + version that produced it (a change re-extracts)

    def to_dict(self) -> dict[str, Any]:
        return _as_row(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Document:
        return cls(**d)


@dataclass
class Chunk:
    """A contiguous span ``[start, end)`` of a Document's Markdown, under one header path."""

    chunk_id: str
    doc_id: str
    header_path: list[str]
    level: int  # header level of the section (1-4); 0 for text before the first header
    start: int
    end: int
    text: str  # == document.markdown[start:end]
    search_text: str  # what BM25 indexes and the model embeds: header path line + body
    sha256: str  # of search_text: the embedding cache key (with the model id)
    tokens: int  # model tokens of search_text (0 when no tokenizer was used)
    part: int = 0  # 0 for a whole section; 1.. for the pieces of a section split to fit the window
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def header(self) -> str:
        return HEADER_SEP.join(self.header_path)

    def to_dict(self) -> dict[str, Any]:
        return _as_row(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        return cls(**d)


def _as_row(obj: Document | Chunk) -> dict[str, Any]:
    """The fields in their order, as a table row is written (``dataclasses.asdict`` without its deep copy: rows are
    only serialised, and the copy was 3/4 of writing a version's tables)."""
    return {name: getattr(obj, name) for name in _FIELDS[type(obj)]}


_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in (Document, Chunk)}


@dataclass
class FailedDoc:
    doc_id: str
    stage: str
    reason: str
