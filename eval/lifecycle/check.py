"""``ragrig testset check``: is each case's evidence still where the test set says, with the same text?

Per expectation, the fingerprint it should have is the one written in the test set, else that of the section its
name resolved to in the reference version (the version published before, when there is one). Located in the
checked version (``relevance.locate``) it is **ok**, **moved** (the same text under another header path or in
another file: re-anchored), **changed** (the name resolves, the text was edited: flagged, with a short word diff)
or **gone** (an error naming the case). A case takes the worst status of its expectations.

``targets`` turns a check into what evaluation needs: each case's targets in the checked version (moved ones
re-anchored, cases with a gone expectation left out) and in the reference version.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from ragrig.eval.lifecycle.fingerprints import Evidence, EvidenceIndex
from ragrig.eval.relevance import (
    CHANGED,
    GONE,
    MOVED,
    OK,
    SEVERITY,
    Target,
    add_target,
    by_name,
    locate,
    section_key,
    target_key,
)
from ragrig.eval.testset import Expectation, TestSet
from ragrig.retrieval.documents import Document

STATUSES = (OK, MOVED, CHANGED, GONE)


@dataclass
class ExpectationCheck:
    index: int  # position in the case's expect list
    doc: str  # as the test set writes it
    section: str | None
    grade: int
    status: str
    reason: str = ""
    now_doc: str | None = None  # where the evidence is in the checked version (moved: the new anchor)
    now_section: str | None = None
    fingerprint: str | None = None  # of the evidence in the checked version
    reference: str | None = None  # the fingerprint it should have (the test set's, else the reference version's)
    diff: list[str] = field(default_factory=list)  # changed: the edits, word by word
    now: Evidence | None = field(default=None, repr=False)
    then: Evidence | None = field(default=None, repr=False)
    keys: tuple[str | None, str | None] = field(default=(None, None), repr=False)  # target keys: now, then

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("now", "then", "keys")}


@dataclass
class CaseCheck:
    id: str
    query: str
    status: str
    draft: bool
    expectations: list[ExpectationCheck]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "status": self.status, "draft": self.draft,
                "expectations": [e.to_dict() for e in self.expectations]}


@dataclass
class CheckReport:
    testset: str
    path: str | None
    version: str
    reference_version: str | None
    cases: list[CaseCheck]

    @property
    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.cases) for s in STATUSES}

    @property
    def gone(self) -> list[str]:
        return [c.id for c in self.cases if c.status == GONE]

    def to_dict(self) -> dict[str, Any]:
        return {"testset": self.testset, "path": self.path, "version": self.version,
                "reference_version": self.reference_version, "counts": self.counts,
                "cases": [c.to_dict() for c in self.cases]}


def word_diff(old: str, new: str, context: int = 6, max_hunks: int = 3, width: int = 200) -> list[str]:
    """The edits from ``old`` to ``new`` as a few lines ``… words [-removed-]{+added+} words …``, each with
    ``context`` words either side; at most ``max_hunks`` lines (then how many more), each at most ``width``."""
    a, b = old.split(), new.split()
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    lines = []
    for tag, i1, i2, j1, j2 in ops[:max_hunks]:
        parts = []
        if i2 > i1:
            parts.append(f"[-{' '.join(a[i1:i2])}-]")
        if j2 > j1:
            parts.append(f"{{+{' '.join(b[j1:j2])}+}}")
        before = a[max(0, i1 - context) : i1]
        after = a[i2 : i2 + context]
        line = " ".join([*before, "".join(parts), *after])
        line = ("… " if i1 > context else "") + line + (" …" if i2 + context < len(a) else "")
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
    if len(ops) > max_hunks:
        lines.append(f"(+{len(ops) - max_hunks} more edits)")
    return lines


def reference_evidence(exp: Expectation, ref_docs: dict[str, Document] | None,
                       ref_index: EvidenceIndex | None) -> Evidence | None:
    """The expectation's evidence in the reference version: the section with the test set's fingerprint (by name
    first), else, without a fingerprint, whatever its name resolves to there. None: not found."""
    if ref_docs is None or ref_index is None:
        return None
    named = by_name(exp, ref_docs)
    if exp.fingerprint is None:
        return named if isinstance(named, Evidence) else None
    if isinstance(named, Evidence) and named.fingerprint == exp.fingerprint:
        return named
    found = ref_index.find(exp.fingerprint, whole_document=not exp.section)
    return found[0] if len(found) == 1 else None


def check_testset(ts: TestSet, docs: dict[str, Document], version: str,
                  reference: dict[str, Document] | None = None, reference_version: str | None = None) -> CheckReport:
    """Check every case of ``ts`` (drafts included) against ``docs`` (the version checked), with ``reference``
    (the version before it) supplying the texts and fingerprints the test set does not write down."""
    index = EvidenceIndex(docs)
    ref_index = EvidenceIndex(reference) if reference is not None else None
    cases = []
    for case in ts.cases:
        checks = []
        for i, exp in enumerate(case.expect):
            then = reference_evidence(exp, reference, ref_index)
            want = exp.fingerprint or (then.fingerprint if then is not None else None)
            loc = locate(exp, docs, index, want)
            keys = (target_key(docs, loc.doc, loc.section) if loc.doc else None,
                    target_key(reference or {}, exp.doc, exp.section))
            ec = ExpectationCheck(i, exp.doc, exp.section, exp.grade, loc.status, loc.reason, loc.doc, loc.section,
                                  loc.evidence.fingerprint if loc.evidence else None, want, now=loc.evidence,
                                  then=then, keys=keys)
            if loc.status == CHANGED and loc.evidence is not None:
                if then is not None and then.fingerprint == want:
                    ec.diff = word_diff(then.body, loc.evidence.body)
                else:
                    where = f" in {reference_version}" if reference_version else ""
                    ec.diff = [f"(the text with fingerprint {want} is not{where}: no diff to show)"]
            checks.append(ec)
        status = max((e.status for e in checks), key=SEVERITY.__getitem__)
        cases.append(CaseCheck(case.id, case.query, status, case.draft, checks))
    return CheckReport(ts.name, ts.path, version, reference_version, cases)


def targets(report: CheckReport, ts: TestSet, reference: bool = False) -> dict[str, list[Target]]:
    """Each case's targets in the checked version (``reference``: in the reference version), from the check:
    moved expectations at their new place; a case with an expectation that has no evidence there is left out."""
    by_id = {c.id: c for c in report.cases}
    out: dict[str, list[Target]] = {}
    for case in ts.cases:
        cc = by_id.get(case.id)
        if cc is None:
            continue
        found: dict[str, Target] = {}
        for exp, ec in zip(case.expect, cc.expectations, strict=True):
            ev = ec.then if reference else ec.now
            if ev is None:
                break
            doc, section = (exp.doc, exp.section) if reference else (ec.now_doc or exp.doc, ec.now_section)
            key = ec.keys[1 if reference else 0] or section_key(doc, section)
            add_target(found, Target(key, ev.doc_id, ev.start, ev.end, exp.grade, ev.text, ev.fingerprint))
        else:
            out[case.id] = list(found.values())
    return out


def to_markdown(reports: list[dict[str, Any]]) -> str:
    """The check (``CheckReport.to_dict()`` per test set) as Markdown: counts, then a row per flagged expectation."""
    lines = []
    for r in reports:
        against = f" (reference {r['reference_version']})" if r.get("reference_version") else ""
        counts = ", ".join(f"{n} {s}" for s, n in r["counts"].items())
        lines += [f"### Test set check: {r['testset']} on {r['version']}{against}", "", counts, ""]
        flagged = [c for c in r["cases"] if c["status"] != OK]
        if not flagged:
            lines += ["every case's evidence is where the test set says, with the same text", ""]
            continue
        lines += ["| case | status | expectation | now / why |", "|---|---|---|---|"]
        for c in flagged:
            for e in c["expectations"]:
                if e["status"] == OK:
                    continue
                if e["status"] == MOVED:
                    detail = f"→ `{e['now_doc']}`" + (f" § `{e['now_section']}`" if e["now_section"] else "")
                elif e["status"] == CHANGED:
                    detail = "<br>".join(f"`{d}`" for d in e["diff"])
                else:
                    detail = e["reason"]
                detail = detail.replace("|", "\\|")
                status = e["status"].upper() if e["status"] == GONE else e["status"]
                draft = " (draft)" if c["draft"] else ""
                lines.append(f"| {c['id']}{draft} | {status} | `{section_key(e['doc'], e['section'])}` | {detail} |")
        lines.append("")
    return "\n".join(lines)
