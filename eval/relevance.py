"""Resolve test-set expectations to character spans of THIS index version's documents.

An expectation names a document and optionally a section (header text or a header-path
suffix). It resolves to the span from that header to the next header of the same or a
higher level, so one test set serves every chunking level: a retrieved chunk is relevant
when its span overlaps an expected span. No match, or several, is an error naming the case.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragrig.configs.errors import InputError
from ragrig.eval.testset import Case, TestSet
from ragrig.retrieval.documents import Document
from ragrig.retrieval.markdown import normalize_header, sections


@dataclass(frozen=True)
class Target:
    """One expected section of one case: a span of a document and its grade."""

    key: str  # "doc#section" (stable across chunkings)
    doc_id: str
    start: int
    end: int
    grade: int
    text: str

    def touches(self, doc_id: str, start: int, end: int) -> bool:
        return doc_id == self.doc_id and start < self.end and end > self.start


def _split_path(section: str) -> list[str]:
    return [normalize_header(p) for p in section.split(">") if p.strip()]


def resolve_section(doc: Document, section: str, where: str) -> tuple[int, int]:
    want = _split_path(section)
    if not want:
        raise InputError(f"{where}: empty section")
    matches = []
    for s in sections(doc.markdown):
        path = [normalize_header(p) for p in s.path]
        if len(path) >= len(want) and path[-len(want) :] == want:
            matches.append(s)
    if not matches:
        raise InputError(f"{where}: section '{section}' matches no header in '{doc.doc_id}'")
    if len(matches) > 1:
        shown = "; ".join(" > ".join(m.path) for m in matches[:5])
        raise InputError(
            f"{where}: section '{section}' matches {len(matches)} headers in '{doc.doc_id}' ({shown}); "
            "use a longer header-path suffix"
        )
    return matches[0].start, matches[0].end


def resolve_case(case: Case, docs: dict[str, Document], testset: str) -> list[Target]:
    targets: dict[str, Target] = {}
    for i, exp in enumerate(case.expect):
        where = f"{testset}: case '{case.id}' expect[{i}]"
        doc = docs.get(exp.doc)
        if doc is None:
            raise InputError(f"{where}: doc '{exp.doc}' is not in the index (wrong path, or it failed to ingest)")
        if exp.section:
            start, end = resolve_section(doc, exp.section, where)
            key = f"{exp.doc}#{' > '.join(_split_path(exp.section))}"
        else:
            start, end, key = 0, len(doc.markdown), exp.doc
        old = targets.get(key)
        if old is None or exp.grade > old.grade:
            targets[key] = Target(key, exp.doc, start, end, exp.grade, doc.markdown[start:end])
    return list(targets.values())


def resolve_testset(ts: TestSet, docs: dict[str, Document]) -> dict[str, list[Target]]:
    return {c.id: resolve_case(c, docs, ts.path or ts.name) for c in ts.cases}
