"""What one index version changed against another, and which test cases that touches.

Documents are matched by id (a removed and an added document with the same text are one **moved** document).
Chunk ids number a document's chunks in order, so an insertion would renumber everything after it: chunks are
matched instead by (document, header path, piece), same text = unchanged, other text = **changed**; what is left
over on both sides is matched by its body's fingerprint (a renamed header, a moved file: **moved**), and the rest
is **added** or **removed**. A case **touches** a change when one of its expected sections overlaps a changed
chunk in either version (``expected``), or when a chunk whose search text changed (an edit, a renamed header,
an addition or a removal, not a moved file) was in its top 10 in either version (``retrieved``); with both
versions evaluated, each touched case carries its paired metric deltas.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ragrig.eval.lifecycle.check import CheckReport, word_diff
from ragrig.eval.lifecycle.fingerprints import fingerprint
from ragrig.eval.relevance import Target
from ragrig.retrieval.documents import Chunk, Document

ADDED, CHANGED, MOVED, REMOVED = "added", "changed", "moved", "removed"
KINDS = (ADDED, CHANGED, MOVED, REMOVED)
DELTA_METRICS = ("ndcg@10", "recall@10", "mrr@10")


@dataclass
class DocChange:
    change: str
    doc_id: str
    old_id: str | None = None  # moved: where it was


@dataclass
class ChunkChange:
    change: str
    doc_id: str
    header: str
    old: str | None  # chunk id in the old version
    new: str | None  # chunk id in the new version
    diff: list[str] = field(default_factory=list)
    search_changed: bool = True  # what BM25 and the encoder see changed (False: a moved file, same header path)
    old_span: tuple[str, int, int] | None = field(default=None, repr=False)
    new_span: tuple[str, int, int] | None = field(default=None, repr=False)


@dataclass
class CaseTouch:
    id: str
    query: str
    tags: list[str]
    via: list[str]  # "expected" and/or "retrieved"
    chunks: list[str]  # the changed chunks it touches (new id, else old id)
    status: str | None = None  # what the test-set check said about the case
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)

    @property
    def delta(self) -> dict[str, float]:
        return {m: self.after[m] - self.before[m] for m in self.before if m in self.after}


@dataclass
class TestsetTouches:
    __test__ = False
    testset: str
    n_cases: int
    touched: list[CaseTouch]
    paired: dict[str, Any] | None = None  # eval.compare over the touched cases evaluated in both versions
    overall: dict[str, Any] | None = None  # the same over every case


@dataclass
class VersionDiff:
    index_key: str
    old_version: str
    new_version: str
    documents: list[DocChange]
    chunks: list[ChunkChange]
    unchanged_documents: int
    unchanged_chunks: int
    testsets: list[TestsetTouches] = field(default_factory=list)

    def counts(self, what: str) -> dict[str, int]:
        items = self.documents if what == "documents" else self.chunks
        return {k: sum(c.change == k for c in items) for k in KINDS}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for c in d["chunks"]:
            c.pop("old_span")
            c.pop("new_span")
        for ts, src in zip(d["testsets"], self.testsets, strict=True):
            for row, touch in zip(ts["touched"], src.touched, strict=True):
                row["delta"] = touch.delta
        d["counts"] = {"documents": self.counts("documents"), "chunks": self.counts("chunks")}
        return d


def _body(c: Chunk) -> str:
    """A chunk's text without its own header line (a renamed header leaves it as it was)."""
    first, _, rest = c.text.partition("\n")
    return rest if first.lstrip().startswith("#") else c.text


def _keyed(chunks: Sequence[Chunk]) -> dict[tuple[Any, ...], Chunk]:
    seen: dict[tuple[Any, ...], int] = defaultdict(int)
    out = {}
    for c in chunks:
        base = (tuple(c.header_path), c.part)
        out[(*base, seen[base])] = c
        seen[base] += 1
    return out


def _span(c: Chunk) -> tuple[str, int, int]:
    return (c.doc_id, c.start, c.end)


def _moved(o: Chunk, c: Chunk) -> ChunkChange:
    return ChunkChange(MOVED, c.doc_id, c.header, o.chunk_id, c.chunk_id, [], o.search_text != c.search_text,
                       _span(o), _span(c))


def diff_documents(old: dict[str, Document], new: dict[str, Document]) -> tuple[list[DocChange], dict[str, str]]:
    """Document changes, and the old id of each document present in both versions (moved ones included)."""
    changes, pairs = [], {}
    removed = sorted(set(old) - set(new))
    added = sorted(set(new) - set(old))
    for d in sorted(set(old) & set(new)):
        pairs[d] = d
        if old[d].sha256 != new[d].sha256 or old[d].markdown != new[d].markdown:
            changes.append(DocChange(CHANGED, d))
    by_text = defaultdict(list)
    for d in removed:
        by_text[old[d].markdown].append(d)
    for d in added:
        was = by_text.get(new[d].markdown)
        if was:
            src = was.pop(0)
            pairs[d] = src
            changes.append(DocChange(MOVED, d, src))
        else:
            changes.append(DocChange(ADDED, d))
    moved_from = {c.old_id for c in changes if c.change == MOVED}
    changes += [DocChange(REMOVED, d) for d in removed if d not in moved_from]
    return sorted(changes, key=lambda c: (c.doc_id, c.change)), pairs


def diff_chunks(old: Sequence[Chunk], new: Sequence[Chunk], pairs: dict[str, str],
                unchanged_docs: set[str]) -> tuple[list[ChunkChange], int]:
    """Chunk changes (and how many chunks stayed as they were) given the document pairing."""
    old_by_doc, new_by_doc = defaultdict(list), defaultdict(list)
    for c in old:
        old_by_doc[c.doc_id].append(c)
    for c in new:
        new_by_doc[c.doc_id].append(c)
    changes: list[ChunkChange] = []
    left_old: list[Chunk] = []
    left_new: list[Chunk] = []
    same = 0
    for doc_id in sorted(new_by_doc):
        if doc_id in unchanged_docs:
            same += len(new_by_doc[doc_id])
            continue
        was = pairs.get(doc_id)
        a = _keyed(old_by_doc.get(was, [])) if was else {}
        for key, c in _keyed(new_by_doc[doc_id]).items():
            o = a.pop(key, None)
            if o is None:
                left_new.append(c)
            elif o.text == c.text and was == doc_id:
                same += 1
            elif o.text == c.text:
                changes.append(_moved(o, c))
            else:
                changes.append(ChunkChange(CHANGED, c.doc_id, c.header, o.chunk_id, c.chunk_id,
                                           word_diff(_body(o), _body(c), max_hunks=2), True, _span(o), _span(c)))
        left_old += a.values()
    paired = set(pairs.values())
    for doc_id in sorted(old_by_doc):
        if doc_id not in paired:
            left_old += old_by_doc[doc_id]
    # what is left: the same body elsewhere is a move (a renamed header, a moved file); the rest came or went
    by_fp: dict[str, list[Chunk]] = defaultdict(list)
    for o in left_old:
        by_fp[fingerprint(_body(o))].append(o)
    for c in left_new:
        olds = by_fp.get(fingerprint(_body(c)))
        if olds and _body(c).strip():
            changes.append(_moved(olds.pop(0), c))
        else:
            changes.append(ChunkChange(ADDED, c.doc_id, c.header, None, c.chunk_id, [], True, None, _span(c)))
    for olds in by_fp.values():
        for o in olds:
            changes.append(ChunkChange(REMOVED, o.doc_id, o.header, o.chunk_id, None, [], True, _span(o), None))
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(changes, key=lambda c: (c.doc_id, order[c.change], c.new or c.old or "")), same


def diff_versions(index_key: str, old_version: str, old_docs: dict[str, Document], old_chunks: Sequence[Chunk],
                  new_version: str, new_docs: dict[str, Document], new_chunks: Sequence[Chunk]) -> VersionDiff:
    docs, pairs = diff_documents(old_docs, new_docs)
    changed = {c.doc_id for c in docs} | {c.old_id for c in docs if c.old_id}
    unchanged = set(new_docs) - changed
    chunks, same = diff_chunks(old_chunks, new_chunks, pairs, unchanged)
    return VersionDiff(index_key, old_version, new_version, docs, chunks, len(unchanged), same)


def _overlaps(span: tuple[str, int, int] | None, targets: Sequence[Target]) -> bool:
    return span is not None and any(t.touches(*span) for t in targets)


def touched_cases(diff: VersionDiff, case_info: Sequence[tuple[str, str, list[str]]],
                  old_targets: dict[str, list[Target]], new_targets: dict[str, list[Target]],
                  old_rows: dict[str, dict[str, Any]] | None = None, new_rows: dict[str, dict[str, Any]] | None = None,
                  check: CheckReport | None = None) -> list[CaseTouch]:
    """The cases (``case_info``: id, query, tags) that touch a changed chunk, in test-set order. ``*_rows``: the
    per-query rows of each version's evaluation (their top 10, and the metrics paired here)."""
    status = {c.id: c.status for c in check.cases} if check else {}
    out = []
    for cid, query, tags in case_info:
        via, names = [], []
        old_top = {h["chunk_id"] for h in (old_rows or {}).get(cid, {}).get("top", [])[:10]}
        new_top = {h["chunk_id"] for h in (new_rows or {}).get(cid, {}).get("top", [])[:10]}
        for ch in diff.chunks:
            expected = (_overlaps(ch.old_span, old_targets.get(cid, []))
                        or _overlaps(ch.new_span, new_targets.get(cid, [])))
            retrieved = ch.search_changed and ((ch.old in old_top) or (ch.new in new_top))
            if expected or retrieved:
                names.append(ch.new or ch.old or "")
                via += [v for v, hit in (("expected", expected), ("retrieved", retrieved)) if hit and v not in via]
        if not names:
            continue
        t = CaseTouch(cid, query, tags, sorted(via), names, status.get(cid))
        if old_rows and new_rows and cid in old_rows and cid in new_rows:
            t.before = {m: old_rows[cid]["metrics"][m] for m in DELTA_METRICS if m in old_rows[cid]["metrics"]}
            t.after = {m: new_rows[cid]["metrics"][m] for m in DELTA_METRICS if m in new_rows[cid]["metrics"]}
        out.append(t)
    return out


def to_markdown(diff: VersionDiff, max_rows: int = 30) -> str:
    """The diff as Markdown: counts, the changed documents and chunks (the first ``max_rows``), then per test set
    the cases that touch them with their paired deltas."""
    lines = [f"## Index diff: `{diff.index_key}` {diff.old_version} → {diff.new_version}", "",
             "| | added | changed | moved | removed | unchanged |", "|---|---:|---:|---:|---:|---:|"]
    for what, same in (("documents", diff.unchanged_documents), ("chunks", diff.unchanged_chunks)):
        n = diff.counts(what)
        lines.append(f"| {what} | {n[ADDED]} | {n[CHANGED]} | {n[MOVED]} | {n[REMOVED]} | {same} |")
    if diff.documents:
        lines += ["", "| document | change |", "|---|---|"]
        lines += [f"| `{d.doc_id}` | {d.change}" + (f" (from `{d.old_id}`)" if d.old_id else "") + " |"
                  for d in diff.documents[:max_rows]]
    if diff.chunks:
        lines += ["", "| chunk | change | header | edit |", "|---|---|---|---|"]
        for c in diff.chunks[:max_rows]:
            ids = c.new or c.old if c.change != MOVED else f"{c.old} → {c.new}"
            edit = "<br>".join(f"`{d}`" for d in c.diff).replace("|", "\\|")
            header = c.header.replace("|", "\\|")
            lines.append(f"| `{ids}` | {c.change} | {header} | {edit} |")
        if len(diff.chunks) > max_rows:
            lines.append(f"\n({len(diff.chunks) - max_rows} more changed chunks in the JSON)")
    for ts in diff.testsets:
        lines += ["", f"### Cases that touch the changes: {ts.testset} ({len(ts.touched)} of {ts.n_cases})", ""]
        if not ts.touched:
            lines.append("no case's expected sections or top 10 touch a changed chunk")
            continue
        lines += ["| case | check | via | " + " | ".join(f"{m} before → after (Δ)" for m in DELTA_METRICS) + " |",
                  "|---|---|---|" + "---|" * len(DELTA_METRICS)]
        for t in ts.touched:
            cells = [f"{t.before[m]:.3f} → {t.after[m]:.3f} ({t.after[m] - t.before[m]:+.3f})"
                     if m in t.before and m in t.after else "–" for m in DELTA_METRICS]
            lines.append(f"| {t.id} | {t.status or ''} | {', '.join(t.via)} | " + " | ".join(cells) + " |")
        if ts.paired:
            lines += ["", f"Paired over the {ts.paired['n']} touched cases evaluated in both versions "
                          "(permutation test): " + "; ".join(
                              f"{m['metric']} {m['delta']:+.4f} (p={m['p_permutation']:.4f}, "
                              f"W/T/L {m['wins']}/{m['ties']}/{m['losses']})" for m in ts.paired["metrics"])]
        if ts.overall:
            lines += ["", f"Over all {ts.overall['n']} cases: " + "; ".join(
                f"{m['metric']} {m['delta']:+.4f} (p={m['p_permutation']:.4f})" for m in ts.overall["metrics"])]
    return "\n".join(lines)
