"""The diff between two index versions on the hand-made toy versions (chunked for real): which documents and
chunks were added, changed, moved or removed, which cases touch them and how, with their paired deltas."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ragrig.eval.lifecycle.check import check_testset, targets
from ragrig.eval.lifecycle.diff import TestsetTouches, diff_versions, to_markdown, touched_cases
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document

sys.path.insert(0, str(Path(__file__).parent))
from toy_versions import V1, V2, doc  # noqa: E402

EXTRA = doc("extra.md", "# Extra\n\nSomething unrelated that stays the same.\n")
OLD = {**V1, "extra.md": EXTRA}
NEW = {**V2, "extra.md": EXTRA}
PARAMS = ChunkingParams(max_header_level=3, max_tokens=200)


def chunks(docs):
    return [c for d in sorted(docs) for c in chunk_document(docs[d], PARAMS)]


def cases() -> TestSet:
    def case(cid, *expect):
        return Case(id=cid, query=f"query {cid}", expect=list(expect), tags=["t"])

    return TestSet(name="toy", cases=[
        case("dash", Expectation(doc="core/rules.md", section="Movement > Dash")),
        case("charge", Expectation(doc="core/rules.md", section="Charge")),
        case("shooting", Expectation(doc="core/rules.md", section="Shooting")),
        case("faq", Expectation(doc="faq.md")),
        case("extra", Expectation(doc="extra.md")),  # unchanged evidence, but the renamed chunk is in its top 10
        case("extra2", Expectation(doc="extra.md")),  # the moved file's chunk in its top 10: not a search change
    ])


def test_documents_and_chunks():
    old_chunks, new_chunks = chunks(OLD), chunks(NEW)
    # v1: Core Rules #0, Dash #1, Charge #2, Shooting #3 ("## Movement" has no text: no chunk); v2: #0, Sprint #1,
    # Charge #2
    assert [c.chunk_id for c in old_chunks if c.doc_id == "core/rules.md"] == [f"core/rules.md#{i}" for i in range(4)]
    d = diff_versions("toy-k", "v000001", OLD, old_chunks, "v000002", NEW, new_chunks)
    assert [(x.change, x.doc_id, x.old_id) for x in d.documents] == [("changed", "core/rules.md", None),
                                                                      ("moved", "help/faq.md", "faq.md")]
    assert d.unchanged_documents == 1  # extra.md
    got = [(c.change, c.old, c.new, c.search_changed) for c in d.chunks]
    assert got == [
        ("changed", "core/rules.md#2", "core/rules.md#2", True),
        ("moved", "core/rules.md#1", "core/rules.md#1", True),  # Dash -> Sprint: same body, new header path
        ("removed", "core/rules.md#3", None, True),
        ("moved", "faq.md#0", "help/faq.md#0", False),  # the same text in a moved file
    ]
    assert d.chunks[0].diff == ["Charge text {+changed+} here."]
    assert d.counts("chunks") == {"added": 0, "changed": 1, "moved": 2, "removed": 1}
    assert d.unchanged_chunks == 2  # core/rules.md#0 and extra.md#0


def test_touched_cases_and_their_deltas():
    ts = cases()
    old_chunks, new_chunks = chunks(OLD), chunks(NEW)
    d = diff_versions("toy-k", "v000001", OLD, old_chunks, "v000002", NEW, new_chunks)
    check = check_testset(ts, NEW, "v000002", OLD, "v000001")

    def row(cid, ndcg, top):
        return {"id": cid, "metrics": {"ndcg@10": ndcg, "recall@10": 1.0, "mrr@10": ndcg},
                "top": [{"chunk_id": t} for t in top]}

    old_rows = {"dash": row("dash", 1.0, ["core/rules.md#1"]), "extra": row("extra", 1.0, ["extra.md#0"]),
                "extra2": row("extra2", 1.0, ["extra.md#0", "faq.md#0"])}
    new_rows = {"dash": row("dash", 0.5, ["core/rules.md#0", "core/rules.md#1"]),
                "extra": row("extra", 0.63, ["core/rules.md#1", "extra.md#0"]),
                "extra2": row("extra2", 1.0, ["extra.md#0", "help/faq.md#0"])}
    info = [(c.id, c.query, c.tags) for c in ts.cases]
    touched = touched_cases(d, info, targets(check, ts, reference=True), targets(check, ts), old_rows, new_rows,
                            check)
    by_id = {t.id: t for t in touched}
    assert list(by_id) == ["dash", "charge", "shooting", "faq", "extra"]  # extra2: a moved file is no search change
    assert by_id["dash"].via == ["expected", "retrieved"] and by_id["dash"].status == "moved"
    assert by_id["dash"].chunks == ["core/rules.md#1"]
    assert by_id["dash"].delta == {"ndcg@10": pytest.approx(-0.5), "recall@10": 0.0, "mrr@10": pytest.approx(-0.5)}
    assert by_id["charge"].via == ["expected"] and by_id["charge"].status == "changed" and by_id["charge"].delta == {}
    assert by_id["shooting"].status == "gone" and by_id["shooting"].chunks == ["core/rules.md#3"]
    assert by_id["faq"].chunks == ["help/faq.md#0"] and by_id["faq"].via == ["expected"]
    assert by_id["extra"].via == ["retrieved"] and by_id["extra"].delta["ndcg@10"] == pytest.approx(-0.37)

    d.testsets.append(TestsetTouches("toy", 6, touched))
    md = to_markdown(d)
    assert "## Index diff: `toy-k` v000001 → v000002" in md
    assert "| chunks | 0 | 1 | 2 | 1 | 2 |" in md
    assert "| `core/rules.md#1 → core/rules.md#1` | moved |" in md
    assert "### Cases that touch the changes: toy (5 of 6)" in md
    assert "| dash | moved | expected, retrieved | 1.000 → 0.500 (-0.500) |" in md
    js = d.to_dict()
    assert js["counts"]["documents"] == {"added": 0, "changed": 1, "moved": 1, "removed": 0}
    assert js["testsets"][0]["touched"][0]["delta"]["ndcg@10"] == pytest.approx(-0.5)
    assert "old_span" not in js["chunks"][0]
