"""Evidence fingerprints: a short hash of a section's own text (its body, without its header line, whitespace
collapsed), so the same text is recognised under a renamed header or in a moved file, and an edit is not.

A whole-document expectation fingerprints the whole document. ``EvidenceIndex`` finds, in one index version,
every section whose text has a given fingerprint (what re-anchors a moved expectation).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from ragrig.retrieval.documents import Document
from ragrig.retrieval.markdown import Section, sections

FP_CHARS = 16  # 64 bits: collisions between the sections of one corpus are not a practical concern


def fingerprint(text: str) -> str:
    """The fingerprint of a text: sha256 over its words joined by single spaces (layout changes are not edits)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:FP_CHARS]


@dataclass(frozen=True)
class Evidence:
    """One section (or a whole document, ``path`` empty) of one index version, and its fingerprint."""

    doc_id: str
    path: tuple[str, ...]  # header titles from the outermost down; () for a whole document
    start: int  # the span an expectation resolves to (header line included)
    end: int
    body_start: int  # where the fingerprinted text starts (past the header line)
    text: str  # markdown[start:end]
    fingerprint: str

    @property
    def body(self) -> str:
        return self.text[self.body_start - self.start :]

    @property
    def where(self) -> str:
        return f"{self.doc_id}#{' > '.join(self.path)}" if self.path else self.doc_id


def section_evidence(doc: Document, s: Section) -> Evidence:
    text = doc.markdown[s.start : s.end]
    return Evidence(doc.doc_id, s.path, s.start, s.end, s.header.body_start, text,
                    fingerprint(doc.markdown[s.header.body_start : s.end]))


def document_evidence(doc: Document) -> Evidence:
    return Evidence(doc.doc_id, (), 0, len(doc.markdown), 0, doc.markdown, fingerprint(doc.markdown))


class EvidenceIndex:
    """Every section and document of one version by fingerprint, built on first use (a check only needs it when
    an expectation no longer resolves by name, or resolves to other text). Empty bodies are left out: a header
    with no text of its own is not evidence of anything."""

    def __init__(self, docs: Mapping[str, Document]) -> None:
        self.docs = docs

    @cached_property
    def _by_fp(self) -> dict[str, list[Evidence]]:
        out: dict[str, list[Evidence]] = defaultdict(list)
        for doc_id in sorted(self.docs):
            doc = self.docs[doc_id]
            if doc.markdown.strip():
                out[fingerprint(doc.markdown)].append(document_evidence(doc))
            for s in sections(doc.markdown):
                if doc.markdown[s.header.body_start : s.end].strip():
                    ev = section_evidence(doc, s)
                    out[ev.fingerprint].append(ev)
        return dict(out)

    def find(self, fp: str, whole_document: bool) -> list[Evidence]:
        """Sections (or, ``whole_document``, documents) whose text has fingerprint ``fp``, in doc id order."""
        return [e for e in self._by_fp.get(fp, []) if (not e.path) == whole_document]
