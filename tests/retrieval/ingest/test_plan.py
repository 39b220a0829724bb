"""The diff against the published version, and the assembly of the next one (no model: hand-made documents)."""

from __future__ import annotations

import pytest
from ragrig.retrieval.documents import Chunk, Document, SourceDoc
from ragrig.retrieval.index import chunk_table
from ragrig.retrieval.index.format import new_manifest, write_manifest, write_tables
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest import tables
from ragrig.retrieval.ingest.plan import plan_changes, unchanged_corpus_file


def src(doc_id: str, sha: str) -> SourceDoc:
    return SourceDoc(doc_id=doc_id, sha256=sha, format="md", size=1)


def doc(doc_id: str, sha: str, extractor: str = "ex1") -> Document:
    return Document(doc_id=doc_id, sha256=sha, format="md", markdown=f"# {doc_id}", extractor=extractor)


def chunks_of(doc_id: str, n: int, tag: str = "old") -> list[Chunk]:
    return [Chunk(chunk_id=f"{doc_id}#{i}", doc_id=doc_id, header_path=[doc_id], level=1, start=0, end=1,
                  text=f"{tag} {i}", search_text=f"{tag} {i}", sha256=f"{tag}-{doc_id}-{i}", tokens=2)
            for i in range(n)]


PUBLISHED = [doc("a", "sa"), doc("b", "sb"), doc("d", "sd"), doc("e", "se"), doc("f", "sf", extractor="ex0")]


@pytest.fixture
def previous(make_config) -> IndexVersion:
    """A published version holding PUBLISHED, two chunks per document, written with the format's writers."""
    cfg = make_config()
    layout = Layout(cfg)
    vdir = layout.version_dir("v000001")
    vdir.mkdir(parents=True)
    chunks = [c for d in PUBLISHED for c in chunks_of(d.doc_id, 2)]
    write_tables(vdir, PUBLISHED, chunks)
    write_manifest(vdir, new_manifest(cfg, version="v000001", index_key=layout.key, corpus_kind="directory",
                                      model_id="m", dim=2, docs=PUBLISHED, chunks=chunks))
    return IndexVersion(cfg, layout, "v000001")


def test_unchanged_changed_new_removed_and_unreadable(previous):
    # a: same; b: new content; c: new; d: gone; e: unreadable now; f: same bytes, other extractor
    sources = [src("a", "sa"), src("b", "sb2"), src("c", "sc"), src("f", "sf")]
    plan = plan_changes(sources, previous, failed={"e", "zz"}, extractor_key=lambda s: "ex1")
    assert [s.doc_id for s in plan.to_extract] == ["b", "c", "f"]
    assert (plan.new, plan.changed) == (1, 2)
    assert [d.doc_id for d in plan.reused] == ["a", "e"]  # e keeps its last good version
    assert plan.removed == ["d"]
    assert plan.previous == "v000001" and sorted(plan.previous_docs) == ["a", "b", "d", "e", "f"]
    assert sorted(plan.reused_chunks) == ["a", "b", "d", "e", "f"]
    assert [c.chunk_id for c in plan.reused_chunks["a"]] == ["a#0", "a#1"]
    assert not plan.changed_nothing


def test_nothing_changed_loads_no_chunks(previous):
    sources = [src(d.doc_id, d.sha256) for d in PUBLISHED]
    plan = plan_changes(sources, previous, failed=set(), extractor_key=lambda s: "ex0" if s.doc_id == "f" else "ex1")
    assert plan.changed_nothing and plan.to_extract == [] and plan.removed == []
    assert plan.reused_chunks == {}  # only read when something changed
    assert plan.only_failures(0)


def test_without_a_previous_version_everything_is_new():
    plan = plan_changes([src("a", "sa"), src("b", "sb")], None, failed={"a"}, extractor_key=lambda s: "ex1")
    assert [s.doc_id for s in plan.to_extract] == ["a", "b"] and (plan.new, plan.changed) == (2, 0)
    assert (plan.reused, plan.removed, plan.previous, plan.reused_chunks) == ([], [], None, {})
    assert not plan.changed_nothing and not plan.only_failures(0)  # --force or a first run: always builds


@pytest.mark.parametrize("block", [1 << 20, 7])  # rows copied in one read, or one read per row (a 7-byte cap)
def test_the_tables_order_by_doc_id_and_keep_last_good_versions(previous, tmp_path, monkeypatch, block):
    monkeypatch.setattr(chunk_table, "READ_BLOCK", block)
    sources = [src("a", "sa"), src("b", "sb2"), src("c", "sc"), src("g", "sg"), src("f", "sf")]
    plan = plan_changes(sources, previous, failed={"e"}, extractor_key=lambda s: "ex1")  # d removed, e unreadable
    # b extracted but failed to chunk; g failed extraction (not published before); c and f went fine; the
    # partitions come in plan order, which is not doc-id order
    spill = tables.TableSpill(tmp_path)
    spill.add([doc("f", "sf")], chunks_of("f", 3, "new"))
    spill.add([doc("b", "sb2"), doc("c", "sc")], chunks_of("c", 1, "new"))
    out = tables.write_tables(tmp_path, plan, spill, failed={"b", "g"})
    docs, chunks = list(out.docs), list(out.chunks)
    assert [(d.doc_id, d.sha256) for d in docs] == [("a", "sa"), ("b", "sb"), ("c", "sc"), ("e", "se"), ("f", "sf")]
    assert [(c.chunk_id, c.text) for c in chunks] == [
        ("a#0", "old 0"), ("a#1", "old 1"), ("b#0", "old 0"), ("b#1", "old 1"), ("c#0", "new 0"),
        ("e#0", "old 0"), ("e#1", "old 1"), ("f#0", "new 0"), ("f#1", "new 1"), ("f#2", "new 2"),
    ]
    assert docs[4].extractor == "ex1"  # f: the re-extracted document, not the published one
    assert len(out.docs) == 5 and not (tmp_path / tables.SPILL).exists()
    # the same bytes and row offsets as the tables written in one pass from the rows in memory
    (tmp_path / "one").mkdir()
    assert write_tables(tmp_path / "one", docs, chunks).tolist() == out.chunks.offsets.tolist()
    for name in ("documents.jsonl", "chunks.jsonl"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "one" / name).read_bytes()


def test_an_unchanged_corpus_file_repeats_only_its_discover_failures():
    record = {"sha256": "h1", "extractor": "beir:v1"}
    bad = {"doc_id": "corpus.jsonl:2", "stage": "discover", "reason": "bad JSONL record"}
    manifest = {"corpus_file": {**record, "failed": [bad]}}
    assert unchanged_corpus_file(record, manifest) == [bad]
    assert unchanged_corpus_file({**record, "sha256": "h2"}, manifest) is None
    assert unchanged_corpus_file({**record, "extractor": "beir:v2"}, manifest) is None
    assert unchanged_corpus_file(record, {}) is None  # a version built before the record existed
    later = {"doc_id": "d1", "stage": "chunk", "reason": "boom"}
    assert unchanged_corpus_file(record, {"corpus_file": {**record, "failed": [bad, later]}}) is None
