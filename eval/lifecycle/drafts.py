"""``ragrig testset draft``: draft cases from the corpus's own structure, offline and deterministic.

- **exact-term**: a keyword-library term that heads exactly one section (the query is the term, a value in its
  slot: "Lethal 2+"), expecting that section;
- **header**: "What does X do?" / "How does X work?" for a section whose title no other section has;
- **comparison**: "What is the difference between A and B?" for two sibling sections under one parent;
- **multi-hop**: a section whose text names a rule that heads another section (what the reference judge would
  follow: ``retrieval.multihop.terms.TermIndex``), expecting both; "cite each other" when both name the other.

Every draft is ``draft: true`` with the ``reason`` it was made and fingerprinted expectations, each naming its
section by a reference that resolves to it alone (``eval.references``: the header as written, attribute list
kept, where its plain text names several); evaluation and the gate skip it until a person removes the mark.
At most ``per_kind`` of each kind, spread evenly over the corpus (sections in document order), so a large
corpus is sampled throughout rather than from its first file.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.eval.lifecycle.fingerprints import Evidence, EvidenceIndex, section_evidence
from ragrig.eval.relevance import name_section, resolve_case
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.index.files import write_atomic
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.markdown import normalize_header, sections
from ragrig.retrieval.multihop.terms import TermIndex

KINDS = ("exact-term", "header", "comparison", "multi-hop")
TAGS = {"exact-term": ["exact-term", "single-hop"], "header": ["single-hop"], "comparison": ["comparison"],
        "multi-hop": ["multi-hop"]}
MIN_WORDS = 12  # a section with less text of its own is not worth a question
_SLOT = re.compile(r"\b[xX](\+?)(?=\W|$)")
_NOT_A_NAME = re.compile(r"^(?:what|how|when|why|who|which|can|do|does|is|are|step \d+)\b", re.I)  # not a thing


@dataclass(frozen=True)
class Sec:
    """A section that can be asked about: its evidence, its own text (up to its first subsection), its parent."""

    ev: Evidence
    title: str
    level: int
    own: str
    parent: tuple[str, tuple[str, ...]]  # (doc, the parent's header path): siblings share it
    order: int  # position in the corpus (documents by id, sections in order)


def corpus_sections(version: IndexVersion) -> list[Sec]:
    out = []
    for doc_id in sorted(version.documents_by_id):
        doc = version.documents_by_id[doc_id]
        secs = sections(doc.markdown)
        for i, s in enumerate(secs):
            if s.header.level < 2 or not s.header.title:
                continue  # a document's own title names the document, not a rule
            child = next((x.start for x in secs[i + 1 :] if x.start < s.end and x.header.level > s.header.level),
                         s.end)
            own = doc.markdown[s.header.body_start : child]
            out.append(Sec(section_evidence(doc, s), s.header.title, s.header.level, own,
                           (doc_id, s.path[:-1]), len(out)))
    return out


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` items spread evenly over ``items`` (all of them when there are at most ``n``), order kept."""
    if len(items) <= n:
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")[:50] or "x"


class Drafter:
    def __init__(self, version: IndexVersion) -> None:
        self.version = version
        self.docs = version.documents_by_id
        every = corpus_sections(version)
        self.secs = [s for s in every if _words(s.own) >= MIN_WORDS]
        all_titles = Counter(normalize_header(s.title) for s in every)
        self.unique = [s for s in self.secs if all_titles[normalize_header(s.title)] == 1]
        self.terms = TermIndex(version.keywords, version.chunks)
        # a place is a chunk's (doc, clean header path): two sections there (told apart only by case or anchor in
        # their text as written) are not one place a term can head
        places = Counter((s.ev.doc_id, s.ev.path) for s in every)
        by_place = {(s.ev.doc_id, s.ev.path): s for s in self.secs if places[(s.ev.doc_id, s.ev.path)] == 1}
        self.term_secs: dict[str, Sec] = {}
        for term, chunk_ids in self.terms.rows.items():
            places = {(c.doc_id, tuple(c.header_path)) for c in version.chunks if c.chunk_id in chunk_ids}
            if len(places) == 1 and next(iter(places)) in by_place:
                self.term_secs[term] = by_place[next(iter(places))]
        self.kinds = {t["term"]: t["kind"] for t in version.keywords.get("terms", [])}
        # a term some text mentions besides its own header line (the header line counts once in its chunk's text)
        self.mentioned = {t["term"] for t in version.keywords.get("terms", [])
                          if t.get("text_count", 0) > t.get("header_count", 0)}
        self._names: dict[int, str | None] = {}

    def name(self, s: Sec) -> str | None:
        """The reference a draft writes for ``s`` (``relevance.name_section``: one that resolves to it alone,
        attribute list kept where plain text is ambiguous); None when nothing names it alone."""
        if s.order not in self._names:
            self._names[s.order] = name_section(self.docs[s.ev.doc_id], s.ev)
        return self._names[s.order]

    def expect(self, s: Sec) -> Expectation:
        name = self.name(s)
        assert name is not None  # draft_testset keeps only drafts whose sections are nameable
        return Expectation(doc=s.ev.doc_id, section=name, grade=2, fingerprint=s.ev.fingerprint)

    def exact_term(self) -> list[tuple[str, str, list[Sec], str]]:
        out = []
        for term, s in sorted(self.term_secs.items(), key=lambda kv: kv[1].order):
            if term not in self.mentioned:
                continue  # a term only its own header uses is a title, not a term people type
            kind = self.kinds.get(term, "phrase")
            m = _SLOT.search(s.title) if kind == "parameterized" else None
            query = f"{term} 2{m.group(1)}" if m else term
            out.append((query, term, [s], f"exact-term: the keyword library's {kind} term '{term}' heads one "
                                          f"section ({s.ev.where})"))
        return out

    def header(self) -> list[tuple[str, str, list[Sec], str]]:
        out = []
        for s in self.unique:
            if s.title.endswith("?") or len(s.title.split()) > 6 or _NOT_A_NAME.match(s.title):
                continue
            query = (f"How does {s.title} work?" if s.title.split()[-1].casefold().endswith("ing")
                     else f"What does {s.title} do?")
            out.append((query, s.title, [s], f"header: no other section is titled '{s.title}' ({s.ev.where})"))
        return out

    def comparison(self) -> list[tuple[str, str, list[Sec], str]]:
        siblings: dict[tuple[str, tuple[str, ...]], list[Sec]] = defaultdict(list)
        for s in self.unique:
            if len(s.title.split()) <= 6 and not s.title.endswith("?") and not _NOT_A_NAME.match(s.title):
                siblings[s.parent].append(s)
        out = []
        for (doc_id, parent), group in sorted(siblings.items(), key=lambda kv: kv[1][0].order):
            same = [s for s in group if s.level == group[0].level]
            if len(same) >= 2:
                a, b = same[0], same[1]
                out.append((f"What is the difference between {a.title} and {b.title}?", f"{a.title} vs {b.title}",
                            [a, b], f"comparison: sibling sections under '{' > '.join(parent)}' in {doc_id}"))
        return out

    def multi_hop(self) -> list[tuple[str, str, list[Sec], str]]:
        out = []
        for a in self.secs:
            for term in self.terms.terms_in(a.own):
                b = self.term_secs.get(term)
                if b is None or b.ev.doc_id == a.ev.doc_id and (b.ev.path[: len(a.ev.path)] == a.ev.path
                                                                   or a.ev.path[: len(b.ev.path)] == b.ev.path):
                    continue  # the same section, or one inside the other
                mutual = any(self.term_secs.get(t) is a for t in self.terms.terms_in(b.own))
                how = "cite each other" if mutual else f"the first names '{term}', which heads the second"
                named = re.search(rf"(?<!\w){re.escape(term)}(?:\s+(?:[xX]|\d+)\+?)?(?!\w)", a.own, re.I)
                said = named.group(0) if named else term  # "Lethal 5+" as the profile writes it
                out.append((f"How does {said} apply to {a.title}?", f"{a.title} {term}", [a, b],
                            f"multi-hop: {a.ev.where} and {b.ev.where} {how}"))
                break  # one chain per section: its most specific reference (terms_in orders by rarity)
        return out


def draft_testset(version: IndexVersion, kinds: Sequence[str] = KINDS, per_kind: int = 25,
                  name: str | None = None) -> TestSet:
    """Drafts of each kind in ``kinds`` (at most ``per_kind`` each) from ``version``'s documents and keywords."""
    d = Drafter(version)
    makers = {"exact-term": d.exact_term, "header": d.header, "comparison": d.comparison, "multi-hop": d.multi_hop}
    cases: list[Case] = []
    ids: set[str] = set()
    found: dict[str, int] = {}
    for kind in kinds:
        # a draft names each section so that it resolves to that section alone; one with a twin (the same header
        # path, as written) cannot be named and is not drafted
        made = [m for m in makers[kind]() if all(d.name(s) is not None for s in m[2])]
        found[kind] = len(made)
        for query, label, secs, reason in spread(made, per_kind):
            cid = base = f"draft-{kind}-{_slug(label)}"
            n = 2
            while cid in ids:
                cid, n = f"{base}-{n}", n + 1
            ids.add(cid)
            cases.append(Case(id=cid, query=query, expect=[d.expect(s) for s in secs], tags=TAGS[kind],
                              draft=True, reason=reason))
    if not cases:
        raise InputError(f"{version.layout.key}@{version.version}: no section has enough text to draft a case from")
    return TestSet(name=name or f"{version.layout.key.rsplit('-', 1)[0]}-drafts",
                   corpus=version.manifest.get("fingerprint", {}).get("corpus", {}).get("path"),
                   description=f"drafts from {version.layout.key}@{version.version} (ragrig testset draft; "
                               f"candidates: {', '.join(f'{k} {n}' for k, n in found.items())})",
                   cases=cases)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(text, ensure_ascii=False)


def drafts_yaml(ts: TestSet) -> str:
    """The drafts in the layout of the hand-written test sets: one flow mapping per expectation, flow tags."""
    lines = ["# Drafts made by `ragrig testset draft`. Each case is `draft: true`: eval and the gate skip it.",
             "# Review a case (the query a user would ask, the expected sections), then delete its `draft: true`",
             "# line to keep it (the `reason` line may go too).",
             f"name: {_q(ts.name)}"]
    if ts.corpus:
        lines.append(f"corpus: {_q(ts.corpus)}")
    if ts.description:
        lines.append(f"description: {_q(ts.description)}")
    lines.append("cases:")
    for c in ts.cases:
        lines += ["", f"  - id: {c.id}", f"    query: {_q(c.query)}", "    expect:"]
        for e in c.expect:
            section = f", section: {_q(e.section)}" if e.section else ""
            fp = f", fingerprint: {_q(e.fingerprint)}" if e.fingerprint else ""
            lines.append(f"      - {{doc: {_q(e.doc)}{section}, grade: {e.grade}{fp}}}")
        lines += [f"    tags: [{', '.join(c.tags)}]", "    draft: true", f"    reason: {_q(c.reason or '')}"]
    return "\n".join(lines) + "\n"


def write_drafts(ts: TestSet, version: IndexVersion, output: str | Path) -> dict[str, Any]:
    """Write the drafts as a YAML test set; return what was made: counts per kind and how many resolve."""
    write_atomic(Path(output), drafts_yaml(ts).encode("utf-8"))
    docs = version.documents_by_id
    index = EvidenceIndex(docs)
    resolved = 0
    for c in ts.cases:
        try:
            resolve_case(c, docs, str(output), index)
            resolved += 1
        except InputError:
            pass
    kinds = [(c.reason or "").split(":")[0] for c in ts.cases]
    return {"index": f"{version.layout.key}@{version.version}", "drafts": len(ts.cases), "kinds": kinds,
            "per_kind": dict(Counter(kinds)), "resolved": resolved, "output": str(output),
            "description": ts.description}
