"""Metadata filters over chunks: document path glob, document format, frontmatter fields."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.retrieval.documents import FORMATS, Chunk

FORMAT_KEYS = ("format", "doc_type", "type")
KNOWN_FORMATS = tuple(sorted({*FORMATS.values(), "beir"}))  # every value a chunk's metadata["format"] can hold


@dataclass(frozen=True)
class Filters:
    path: str | None = None  # glob on the document id / relative path, e.g. "teams/*"
    format: str | None = None  # md | html | docx | pptx | pdf | beir
    fields: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # frontmatter key == value (lists: contains)

    @property
    def empty(self) -> bool:
        return self.path is None and self.format is None and not self.fields

    @classmethod
    def parse(cls, items: Sequence[str]) -> Filters:
        """``path=teams/*``, ``format=md``, ``fm.faction=Iron Wardens`` (repeatable)."""
        path = fmt = None
        fields: list[tuple[str, str]] = []
        for item in items:
            if "=" not in item:
                raise InputError(f"--filter {item!r}: expected path=GLOB, format=FMT or fm.FIELD=VALUE")
            k, v = (s.strip() for s in item.split("=", 1))
            if not v:
                raise InputError(f"--filter {item!r}: an empty value matches no document")
            if (k == "path" and path is not None) or (k in FORMAT_KEYS and fmt is not None):
                raise InputError(f"--filter {item!r}: {k} is given twice; one value each (a glob covers several "
                                 "paths: teams/*)")
            if k == "path":
                path = v
            elif k in FORMAT_KEYS:
                fmt = v.casefold().lstrip(".")
                if fmt not in KNOWN_FORMATS:
                    raise InputError(f"--filter {item!r}: no document has format {v!r}; formats: "
                                     f"{', '.join(KNOWN_FORMATS)}")
            elif k.startswith("fm.") and len(k) > 3:
                fields.append((k[3:], v))
            else:
                raise InputError(f"--filter {item!r}: unknown filter key {k!r}; use path, format or fm.FIELD")
        return cls(path=path, format=fmt, fields=tuple(fields))

    def accepts(self, chunk: Chunk) -> bool:
        if self.path is not None and not fnmatch.fnmatchcase(chunk.doc_id, self.path):
            return False
        if self.format is not None and str(chunk.metadata.get("format", "")) != self.format:
            return False
        for k, v in self.fields:
            got = chunk.metadata.get(k)
            if isinstance(got, list):
                if v.casefold() not in (str(x).casefold() for x in got):
                    return False
            elif got is None or str(got).casefold() != v.casefold():
                return False
        return True

    def mask(self, chunks: Sequence[Chunk]) -> np.ndarray:
        return np.fromiter((self.accepts(c) for c in chunks), dtype=bool, count=len(chunks))


def live(filters: Filters | None) -> Filters | None:
    """``filters``, or None when there are none or they allow everything."""
    return None if filters is None or filters.empty else filters
