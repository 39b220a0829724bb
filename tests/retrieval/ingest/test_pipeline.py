"""Incremental, versioned ingestion end to end with the real MiniLM model on tiny corpora."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.format import CHUNKS, collection_name, iter_jsonl
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline

pytestmark = pytest.mark.slow

ALPHA = (
    "---\ntitle: Alpha Rules\ncategory: core\n---\n"
    "# Alpha\n\nAlpha intro text about moving.\n\n"
    "## Moving\n\nMove up to six inches.\n\n"
    "## Charging\n\nCharge into engagement range.\n"
)
BETA = (
    "# Beta\n\nBeta overview of shooting.\n\n"
    "## Shooting\n\nPick a target in line of sight.\n\n"
    "### Cover\n\nCover grants a save.\n"
)
NOTES = "Plain notes without any header at all.\n"
DELTA = "# Delta\n\nDelta text about objectives.\n"

CORPUS = {"a.md": ALPHA, "b.md": BETA, "c.md": NOTES, "sub/d.md": DELTA}
# chunks at max_header_level 3: a.md 3 (Alpha, Moving, Charging), b.md 3 (Beta, Shooting, Cover), c.md 1, d.md 1
CHUNKS_PER_DOC = {"a.md": 3, "b.md": 3, "c.md": 1, "sub/d.md": 1}


@pytest.fixture
def make_config(make_config):
    """This module checks every store a version writes against the others, the Chroma collection included, so
    its configs write one (``index.vector_search.mode: chroma``; the default writes none: test_build.py)."""
    return lambda corpus_dir=None, *sets, **kw: make_config(corpus_dir, "index.vector_search.mode=chroma", *sets, **kw)


@pytest.fixture
def corpus(tmp_path, write_files) -> Path:
    return write_files(tmp_path / "corpus", CORPUS)


def ingest(cfg, **kw):
    pipe = IngestPipeline(cfg, **kw)
    return pipe.run()


def current(cfg) -> IndexVersion:
    return IndexVersion.current(cfg)


def index_ids(cfg) -> tuple[list[str], list[str], int]:
    """(chunk ids in chunks.jsonl, ids in the Chroma collection, BM25 size) of the published version."""
    v = current(cfg)
    table = [d["chunk_id"] for d in iter_jsonl(v.dir / CHUNKS)]
    chroma = v.collection().get()["ids"]
    bm25 = Bm25Index.load(v.bm25_dir, cfg.index.bm25).size
    return table, chroma, bm25


def assert_consistent(cfg, n: int) -> list[str]:
    table, chroma, bm25 = index_ids(cfg)
    assert len(table) == len(set(table)) == n
    assert len(chroma) == len(set(chroma)) == n
    assert sorted(table) == sorted(chroma)
    assert bm25 == n
    assert current(cfg).manifest["counts"]["chunks"] == n
    return table


def test_first_ingest_then_nothing_changed(corpus, make_config):
    cfg = make_config(corpus)
    s = ingest(cfg)
    assert (s.version, s.previous_version, s.published) == ("v000001", None, True)
    counts = (s.docs_seen, s.docs_new, s.docs_changed, s.docs_unchanged, s.docs_removed, s.docs_failed)
    assert counts == (4, 4, 0, 0, 0, 0)
    assert s.chunks == 8 and s.chunks_embedded == 8 and s.chunks_cached == 0 and s.chunks_over_window == 0
    ids = assert_consistent(cfg, 8)
    assert ids == ["a.md#0", "a.md#1", "a.md#2", "b.md#0", "b.md#1", "b.md#2", "c.md#0", "sub/d.md#0"]
    v = current(cfg)
    assert v.manifest["counts"] == {"documents": 4, "chunks": 8}
    assert [(c.header_path, c.level) for c in v.chunks[:3]] == [
        (["Alpha"], 1),
        (["Alpha", "Moving"], 2),
        (["Alpha", "Charging"], 2),
    ]
    assert v.chunks[6].header_path == [] and v.chunks[6].level == 0
    assert v.chunks[0].metadata["title"] == "Alpha Rules" and v.chunks[0].metadata["category"] == "core"
    assert Layout(cfg).current_file.read_text().strip() == "v000001"
    parts = {k: v for k, v in s.seconds.items() if k.startswith("index:")}  # the build, part by part
    assert list(parts) == ["index:tables", "index:bm25", "index:reader", "index:vectors", "index:chroma"]
    assert all(v >= 0 for v in parts.values()) and sum(parts.values()) <= s.seconds["index"] + 0.004  # rounding

    s2 = ingest(cfg)
    assert (s2.published, s2.version, s2.previous_version) == (False, "v000001", "v000001")
    assert (s2.docs_unchanged, s2.docs_new, s2.docs_changed, s2.chunks_embedded, s2.chunks) == (4, 0, 0, 0, 8)
    assert Layout(cfg).published_versions() == ["v000001"]


def test_editing_one_file_re_extracts_and_embeds_only_what_changed(corpus, make_config, monkeypatch):
    cfg = make_config(corpus)
    ingest(cfg)
    before = current(cfg).chunks

    # change the body of one section ("Charging") and nothing else
    (corpus / "a.md").write_text(ALPHA.replace("engagement range.", "engagement range twice."), encoding="utf-8")
    extracted: list[str] = []
    import ragrig.retrieval.ingest.partition as partition_mod

    real = partition_mod.extract_sources

    def spy(cfg, batch, **kw):
        extracted.extend(src.doc_id for src in batch)
        return real(cfg, batch, **kw)

    monkeypatch.setattr(partition_mod, "extract_sources", spy)
    s = ingest(cfg)
    assert extracted == ["a.md"]
    assert (s.version, s.published, s.docs_changed, s.docs_unchanged, s.docs_new) == ("v000002", True, 1, 3, 0)
    after = current(cfg).chunks
    assert [c.chunk_id for c in after] == [c.chunk_id for c in before]
    changed = [b.chunk_id for a, b in zip(before, after) if a.search_text != b.search_text]
    assert changed == ["a.md#2"]
    new_shas = {c.sha256 for c in after} - {c.sha256 for c in before}
    assert s.chunks_embedded == len(new_shas) == 1
    assert s.chunks_cached == 7
    unchanged = [(a.to_dict(), b.to_dict()) for a, b in zip(before, after) if a.chunk_id != "a.md#2"]
    assert all(x == y for x, y in unchanged)
    assert_consistent(cfg, 8)


def test_adding_a_section_shifts_later_chunk_ids_but_embeds_only_new_text(corpus, make_config):
    cfg = make_config(corpus)
    ingest(cfg)
    beta = BETA.replace("## Shooting", "## Range\n\nSix inches.\n\n## Shooting")
    (corpus / "b.md").write_text(beta, encoding="utf-8")
    s = ingest(cfg)
    chunks = current(cfg).chunks
    b = [(c.chunk_id, c.header_path) for c in chunks if c.doc_id == "b.md"]
    assert b == [
        ("b.md#0", ["Beta"]),
        ("b.md#1", ["Beta", "Range"]),
        ("b.md#2", ["Beta", "Shooting"]),
        ("b.md#3", ["Beta", "Shooting", "Cover"]),
    ]
    assert s.chunks == 9 and s.chunks_embedded == 1
    assert_consistent(cfg, 9)


def test_removing_a_file_removes_its_chunks_everywhere(corpus, make_config):
    cfg = make_config(corpus)
    ingest(cfg)
    os.remove(corpus / "sub" / "d.md")
    s = ingest(cfg)
    assert (s.published, s.docs_removed, s.docs_unchanged, s.chunks, s.chunks_embedded) == (True, 1, 3, 7, 0)
    ids = assert_consistent(cfg, 7)
    assert not any(i.startswith("sub/d.md") for i in ids)
    assert "sub/d.md" not in current(cfg).documents_by_id
    assert current(cfg).collection().count() == 7


def test_adding_a_file(corpus, make_config):
    cfg = make_config(corpus)
    ingest(cfg)
    (corpus / "e.md").write_text("# Echo\n\nEcho one.\n\n## Echo Two\n\nEcho two text.\n", encoding="utf-8")
    s = ingest(cfg)
    assert (s.docs_new, s.docs_unchanged, s.chunks, s.chunks_embedded, s.chunks_cached) == (1, 4, 10, 2, 8)
    ids = assert_consistent(cfg, 10)
    # documents are in doc id order: the new file sits between c.md and sub/d.md
    assert ids == ["a.md#0", "a.md#1", "a.md#2", "b.md#0", "b.md#1", "b.md#2", "c.md#0", "e.md#0", "e.md#1",
                   "sub/d.md#0"]


def test_force_rebuilds_a_new_version_from_the_caches(corpus, make_config):
    cfg = make_config(corpus)
    first = ingest(cfg)
    s = ingest(cfg, force=True)
    got = (s.published, s.version, s.docs_new, s.chunks, s.chunks_embedded, s.chunks_cached)
    assert got == (True, "v000002", 4, 8, 0, 8)
    assert Layout(cfg).published_versions() == ["v000001", "v000002"]
    assert first.version == "v000001"
    assert_consistent(cfg, 8)


def test_corrupt_docx_is_a_recorded_failure_and_the_rest_ingests(corpus, make_config):
    (corpus / "broken.docx").write_bytes(random.Random(11).randbytes(4096))
    cfg = make_config(corpus)
    s = ingest(cfg)
    assert s.published and s.docs_seen == 5 and s.docs_failed == 1
    assert [(f["doc_id"], f["stage"]) for f in s.failures] == [("broken.docx", "extract")]
    assert s.failures[0]["reason"]
    assert sorted(current(cfg).documents_by_id) == ["a.md", "b.md", "c.md", "sub/d.md"]
    assert_consistent(cfg, 8)

    # the same broken file on the next run: still reported, but nothing changed, so nothing is published
    s2 = ingest(cfg)
    assert [(f["doc_id"], f["stage"]) for f in s2.failures] == [("broken.docx", "extract")]
    assert (s2.published, s2.version, s2.chunks_embedded) == (False, "v000001", 0)
    assert Layout(cfg).published_versions() == ["v000001"]


def test_keep_versions_prunes_dirs_and_collections(corpus, make_config):
    cfg = make_config(corpus, index__keep_versions=2)
    layout = Layout(cfg)
    for _ in range(3):
        ingest(cfg, force=True)
    assert layout.current_version() == "v000003"
    assert layout.published_versions() == ["v000002", "v000003"]
    assert sorted(p.name for p in layout.versions_dir.iterdir()) == ["v000002", "v000003"]
    client = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)
    names = sorted(n for n in chroma.list_collections(client) if n.startswith(layout.key))
    assert names == [collection_name(layout.key, "v000002"), collection_name(layout.key, "v000003")]
    assert_consistent(cfg, 8)


def test_beir_corpus_ingests_with_record_ids(tmp_path, make_config):
    root = tmp_path / "beir"
    root.mkdir()
    records = [
        {"_id": "d3", "title": "Scurvy", "text": "Vitamin C deficiency.\n# not a header"},
        {"_id": "d1", "title": "Rickets", "text": "Vitamin D deficiency."},
        {"_id": "d2", "title": "", "text": "Untitled record text."},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    cfg = make_config(root)
    s = ingest(cfg)
    assert s.published and s.docs_new == 3 and s.chunks == 3 and s.docs_failed == 0
    v = current(cfg)
    assert v.manifest["corpus_kind"] == "beir"
    assert sorted(v.documents_by_id) == ["d1", "d2", "d3"]
    got = {c.doc_id: (c.chunk_id, c.header_path, c.level) for c in v.chunks}
    assert got == {
        "d1": ("d1#0", ["Rickets"], 1),
        "d2": ("d2#0", [], 0),
        "d3": ("d3#0", ["Scurvy"], 1),
    }
    d3 = next(c for c in v.chunks if c.doc_id == "d3")
    assert d3.search_text == "Scurvy\nVitamin C deficiency.\n\\# not a header"
    assert_consistent(cfg, 3)


def test_an_unchanged_beir_file_is_hashed_not_parsed_and_any_change_is_seen(tmp_path, make_config, monkeypatch):
    import ragrig.retrieval.ingest.pipeline as pipeline

    root = tmp_path / "beir"
    root.mkdir()
    lines = [json.dumps({"_id": "d1", "title": "Rickets", "text": "Vitamin D deficiency."}), "{not json",
             json.dumps({"_id": "d2", "title": "Scurvy", "text": "Vitamin C deficiency."})]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = make_config(root)
    first = ingest(cfg)
    assert first.published and first.docs_new == 2 and first.docs_failed == 1
    record = current(cfg).manifest["corpus_file"]
    assert record["extractor"] == "beir:v1" and [f["stage"] for f in record["failed"]] == ["discover"]

    parsed: list[int] = []
    real = pipeline.discover
    monkeypatch.setattr(pipeline, "discover", lambda c: parsed.append(1) or real(c))
    again = ingest(cfg)
    assert not parsed and not again.published and again.version == first.version
    # the same counts and the same bad record reported as when the file was parsed
    assert (again.docs_seen, again.docs_unchanged, again.docs_failed, again.chunks) == (3, 2, 1, first.chunks)
    assert again.failures == first.failures

    # one byte changed: parsed again, the changed record re-extracted, a new version
    (root / "corpus.jsonl").write_text("\n".join(lines).replace("Vitamin C", "Vitamin c") + "\n", encoding="utf-8")
    changed = ingest(cfg)
    assert parsed == [1] and changed.published and changed.docs_changed == 1 and changed.docs_unchanged == 1
    assert ingest(cfg, force=True).published and parsed == [1, 1]  # --force always parses


def test_embedding_cache_is_shared_across_chunking_levels(corpus, make_config):
    cfg2 = make_config(corpus, chunking__max_header_level=2)
    cfg3 = make_config(corpus, chunking__max_header_level=3)
    assert Layout(cfg2).key != Layout(cfg3).key  # two indexes ...
    assert Layout(cfg2).embedding_cache == Layout(cfg3).embedding_cache  # ... one cache
    s2 = ingest(cfg2)
    assert s2.chunks == 7 and s2.chunks_embedded == 7  # b.md's Cover stays inside Shooting at level 2
    s3 = ingest(cfg3)
    shas2 = {c.sha256 for c in current(cfg2).chunks}
    shas3 = {c.sha256 for c in current(cfg3).chunks}
    # new at level 3: "Beta > Shooting" without Cover, and "Beta > Shooting > Cover"
    assert len(shas3 - shas2) == 2
    assert s3.chunks == 8 and s3.chunks_embedded == len(shas3 - shas2) and s3.chunks_cached == 6


def test_a_file_that_turns_unreadable_keeps_its_last_good_version(corpus, make_config):
    cfg = make_config(corpus)
    ingest(cfg)
    (corpus / "c.md").write_bytes(b"\x00\x01binary now")
    s = ingest(cfg)
    assert [(f["doc_id"], f["stage"]) for f in s.failures] == [("c.md", "extract")]
    assert "NUL" in s.failures[0]["reason"]
    assert (s.published, s.version, s.docs_changed) == (False, "v000001", 1)
    assert "c.md" in current(cfg).documents_by_id
    assert_consistent(cfg, 8)


def test_the_plans_records_are_dropped_once_the_tables_are_written(corpus, make_config, monkeypatch):
    """The discovery's records and the previous version's rows are no part of the build (issue 38: ~0.4 kB a
    document of a driver's memory): the build stage sees the plan emptied, the version is whole, and an
    incremental run still keeps what it carried over."""
    from ragrig.retrieval.ingest import pipeline

    seen: list = []
    real_build = IngestPipeline.build

    def build(self, tables, *a, **k):  # type: ignore[no-untyped-def]
        plan = seen[-1]
        assert (plan.sources, plan.to_extract, plan.reused, plan.reused_chunks, plan.previous_docs) == (
            [], [], [], {}, {})
        return real_build(self, tables, *a, **k)

    real_plan = pipeline.plan_changes
    monkeypatch.setattr(pipeline, "plan_changes", lambda *a, **k: seen.append(real_plan(*a, **k)) or seen[-1])
    monkeypatch.setattr(IngestPipeline, "build", build)
    cfg = make_config(corpus)
    assert ingest(cfg).docs_new == len(CORPUS)
    (corpus / "new.md").write_text("# New\n\nA new document.\n", encoding="utf-8")
    s = ingest(cfg)
    assert (s.docs_new, s.docs_unchanged) == (1, len(CORPUS)) and len(seen) == 2
    assert_consistent(cfg, len(table_ids := index_ids(cfg)[0])) and "new.md#0" in table_ids
