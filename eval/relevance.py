"""Resolve test-set expectations to character spans of THIS index version's documents.

An expectation names a document and optionally a section (header text or a header-path
suffix). It resolves to the span from that header to the next header of the same or a
higher level, so one test set serves every chunking level: a retrieved chunk is relevant
when its span overlaps an expected span. Which header a section names is decided in one place,
``eval.references`` (as written first, then by its header path, then in the normalised form); no
match, or several at the deciding step, is an error naming the file, the case and the candidates.

An expectation that carries a ``fingerprint`` (its section's text when it was last checked,
``eval.lifecycle.fingerprints``) is *located* rather than only resolved (``locate``): when its
name no longer resolves, or resolves to other text while the fingerprinted text sits under
another header or in another file, it follows its text (``moved``, re-anchored); a name that
resolves to edited text is ``changed``; neither is ``gone``. ``ragrig testset check`` reports
these; evaluation follows a moved expectation and fails only on a gone one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragrig.configs.errors import InputError
from ragrig.eval.lifecycle.fingerprints import Evidence, EvidenceIndex, document_evidence, section_evidence
from ragrig.eval.references import name_section as name_reference
from ragrig.eval.references import one_line, problem, reference_key, resolve
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.documents import Document
from ragrig.retrieval.markdown import Section

OK, MOVED, CHANGED, GONE = "ok", "moved", "changed", "gone"
SEVERITY = {OK: 0, MOVED: 1, CHANGED: 2, GONE: 3}


@dataclass(frozen=True)
class Target:
    """One expected section of one case: a span of a document and its grade."""

    key: str  # "doc#section" (stable across chunkings)
    doc_id: str
    start: int
    end: int
    grade: int
    text: str
    fingerprint: str = field(default="", compare=False)  # of the section's text (see eval.lifecycle.fingerprints)

    def touches(self, doc_id: str, start: int, end: int) -> bool:
        return doc_id == self.doc_id and start < self.end and end > self.start


@dataclass(frozen=True)
class Located:
    """Where an expectation's evidence is in one version: ``status`` (ok / moved / changed / gone), the section
    found (None when gone), the expectation as it should now be written (``doc``, ``section``), and why."""

    status: str
    evidence: Evidence | None
    doc: str | None
    section: str | None
    reason: str = ""


def section_key(doc: str, section: str | None) -> str:
    """How an expectation is shown: ``doc#normalised > header > path`` (the document alone for a whole one)."""
    return reference_key(doc, section) if section else doc


def target_key(docs: dict[str, Document], doc: str, section: str | None) -> str:
    """A target's key: ``section_key``, or the section as written where its normalised form is ambiguous in the
    document (``references.reference_key``)."""
    if not section or doc not in docs:
        return section_key(doc, section)
    return reference_key(doc, section, resolve(docs[doc].markdown, section))


def _match_one(doc: Document, section: str) -> Section | str:
    """The one section ``section`` names in ``doc`` (in the order of ``eval.references``), or why not (the error
    text, without where)."""
    res = resolve(doc.markdown, section)
    why = problem(res, doc.doc_id)
    return why if why is not None else res.sections[0]


def resolve_section(doc: Document, section: str, where: str) -> tuple[int, int]:
    found = _match_one(doc, section)
    if isinstance(found, str):
        raise InputError(f"{where}: {found}")
    return found.start, found.end


def by_name(exp: Expectation, docs: dict[str, Document]) -> Evidence | str:
    """What the expectation's name points at in ``docs``, or why it points at nothing (the error text)."""
    doc = docs.get(exp.doc)
    if doc is None:
        return f"doc '{one_line(exp.doc)}' is not in the index (wrong path, or it failed to ingest)"
    if not exp.section:
        return document_evidence(doc)
    found = _match_one(doc, exp.section)
    return found if isinstance(found, str) else section_evidence(doc, found)


def name_section(doc: Document, ev: Evidence, written: str | None = None) -> str | None:
    """How to name section ``ev`` of ``doc`` in a test set: ``written`` (the expectation's old name) when it still
    names exactly that section, else the header-path suffix as long as ``written`` was (or the nearest length)
    that names it alone, as written where plain text is ambiguous (``references.name_section``). None: nothing
    names it alone (two sections with the same whole path as written)."""
    return name_reference(doc.markdown, ev.start, written)


def locate(exp: Expectation, docs: dict[str, Document], index: EvidenceIndex, want: str | None) -> Located:
    """Where ``exp``'s evidence is now, given the fingerprint it should have (``want``; None: unknown, so
    whatever its name resolves to is ``ok``)."""
    named = by_name(exp, docs)
    if isinstance(named, Evidence) and (want is None or named.fingerprint == want):
        return Located(OK, named, exp.doc, exp.section)
    if want is None:
        return Located(GONE, None, None, None, str(named))
    found = index.find(want, whole_document=not exp.section)
    if len(found) > 1:  # the same text in several places: the expectation's own document decides, if it can
        found = [e for e in found if e.doc_id == exp.doc] or found
    if isinstance(named, Evidence):
        if len(found) == 1 and found[0].where != named.where:
            return _moved(exp, docs, found[0], f"its name now points at other text; the text is at {found[0].where}")
        return Located(CHANGED, named, exp.doc, exp.section, "the text of the section was edited")
    if len(found) == 1:
        return _moved(exp, docs, found[0], f"{named}; its text is now at {found[0].where}")
    if found:
        shown = "; ".join(e.where for e in found[:5])
        return Located(GONE, None, None, None, f"{named}; its text is in {len(found)} places ({shown}): name one")
    return Located(GONE, None, None, None, f"{named}; its text (fingerprint {want}) is nowhere in this version")


def _moved(exp: Expectation, docs: dict[str, Document], ev: Evidence, why: str) -> Located:
    if not ev.path:
        return Located(MOVED, ev, ev.doc_id, None, why)
    name = name_section(docs[ev.doc_id], ev, exp.section)
    if name is None:
        return Located(GONE, None, None, None, f"{why}, which no header-path suffix names alone")
    return Located(MOVED, ev, ev.doc_id, name, why)


def target_of(exp: Expectation, loc: Located, docs: dict[str, Document]) -> Target:
    assert loc.evidence is not None and loc.doc is not None
    ev = loc.evidence
    return Target(target_key(docs, loc.doc, loc.section), loc.doc, ev.start, ev.end, exp.grade, ev.text,
                  ev.fingerprint)


def add_target(targets: dict[str, Target], t: Target) -> None:
    """Several expectations of one section count once, at their highest grade."""
    old = targets.get(t.key)
    if old is None or t.grade > old.grade:
        targets[t.key] = t


def resolve_case(case: Case, docs: dict[str, Document], testset: str,
                 index: EvidenceIndex | None = None) -> list[Target]:
    index = index or EvidenceIndex(docs)
    targets: dict[str, Target] = {}
    for i, exp in enumerate(case.expect):
        loc = locate(exp, docs, index, exp.fingerprint)
        if loc.status == GONE:
            raise InputError(f"{testset}: case '{case.id}' expect[{i}]: {loc.reason}")
        add_target(targets, target_of(exp, loc, docs))
    return list(targets.values())


def resolve_testset(ts: TestSet, docs: dict[str, Document]) -> dict[str, list[Target]]:
    index = EvidenceIndex(docs)  # built only if a fingerprinted expectation has to follow its text
    return {c.id: resolve_case(c, docs, ts.path or ts.name, index) for c in ts.cases}
