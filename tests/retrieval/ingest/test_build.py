"""The build step writes a version the reader opens and health passes, file for file the version the previous
code wrote from the same documents and chunks (tests/fixtures/index-v1); a crash inside it publishes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.index import publish
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.format import MANIFEST, read_chunks, read_documents, read_manifest
from ragrig.retrieval.index.health import check_version
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.build import build_version

LEGACY = Path(__file__).resolve().parents[2] / "fixtures" / "index-v1"


@pytest.fixture
def legacy(legacy_writes_collection):
    """The fixture's config (the home comes from RAGRIG_HOME), documents, chunks and one vector per chunk."""
    data = yaml.safe_load((LEGACY / "v000001" / "config.yaml").read_text())
    data.pop("flow")  # runner settings, renamed since (configs/models.py RENAMED); no part of what an index holds
    cfg = RagrigConfig.model_validate(data)
    docs, chunks = list(read_documents(LEGACY / "v000001")), read_chunks(LEGACY / "v000001")
    vectors = np.random.default_rng(3).normal(size=(len(chunks), 384)).astype(np.float32)
    return cfg, docs, chunks, vectors


def build(cfg, docs, chunks, vectors, **kw) -> str:
    return build_version(cfg, Layout(cfg), docs, chunks, vectors, model_id="sentence-transformers/all-MiniLM-L6-v2",
                         dim=384, corpus_kind="directory", **kw)


def test_the_built_version_is_the_legacy_one_and_opens(legacy, drop_added_settings):
    cfg, docs, chunks, vectors = legacy
    marks: list[str] = []
    version = build(cfg, docs, chunks, vectors, mark=marks.append)
    layout = Layout(cfg)
    assert version == "v000001" and marks == ["index:tables", "index:bm25", "index:reader", "index:vectors",
                                              "index:chroma"]
    assert layout.published_versions() == ["v000001"] and layout.leftovers() == []
    assert layout.current_version() is None  # built, not published
    new, old = layout.version_dir(version), LEGACY / "v000001"
    files = sorted(str(p.relative_to(old)) for p in old.rglob("*") if p.is_file())
    # new since the fixture: the version's own unit vectors, row for row the chunks table's, and reader/ (what a
    # reader needs of every row, derived once: tests/retrieval/index/test_chunk_table.py)
    added = ["vectors.npy", *(f"reader/{n}" for n in (
        "codes.npy", "docs.json", "format.json", "header_ptr.npy", "header_rows.npy", "header_titles.bin",
        "header_titles.npy", "headers.txt", "ids.bin", "ids.npy", "order.npy", "rows.npy", "terms.json"))]
    assert sorted(str(p.relative_to(new)) for p in new.rglob("*") if p.is_file()) == sorted(files + added)
    stored = np.load(new / "vectors.npy")
    assert stored.dtype == np.float32 and np.allclose(stored, vectors / np.linalg.norm(vectors, axis=1)[:, None])
    for name in files:
        if name == "config.yaml":  # the resolved config: a setting added since the fixture shows its default
            got, want = yaml.safe_load((new / name).read_text()), yaml.safe_load((old / name).read_text())
            drop_added_settings(got)
            assert got == want
        elif name != MANIFEST and not name.startswith("bm25/"):
            assert (new / name).read_bytes() == (old / name).read_bytes(), name
    # bm25s numbers its vocabulary in set order (it varies with the hash seed): compare term by term
    vocab = json.loads((old / "bm25" / "vocab.index.json").read_text())
    assert set(json.loads((new / "bm25" / "vocab.index.json").read_text())) == set(vocab)
    bm25_old, bm25_new = Bm25Index.load(old / "bm25", cfg.index.bm25), Bm25Index.load(new / "bm25", cfg.index.bm25)
    terms = [t for t in vocab if t]  # "" is bm25s' placeholder for an empty document, never a query token
    assert len(terms) == 19 and all(np.array_equal(bm25_new.scores([t]), bm25_old.scores([t])) for t in terms)
    before, after = read_manifest(old), read_manifest(new)
    assert before.pop("created") and after.pop("created")
    hashes = after.pop("files")  # new since the fixture: every other file's sha256, what ingest and readers check
    assert sorted(hashes) == sorted([f for f in files if f != MANIFEST] + added)
    assert all(hashlib.sha256((new / f).read_bytes()).hexdigest() == h for f, h in hashes.items())
    assert after.pop("vectors") == {"file": "vectors.npy", "dtype": "float32", "hnsw": None}
    assert after.pop("bm25") == {"shards": 1}  # new since the fixture: how many BM25 shards
    assert after == before

    v = IndexVersion(cfg, layout, version)
    col = v.collection()
    got = col.get(include=["metadatas", "embeddings"])
    records = json.loads((LEGACY / "chroma-records.json").read_text())
    assert col.metadata == records["collection_metadata"]
    assert got["ids"] == records["ids"] and got["metadatas"] == records["metadatas"]
    assert np.allclose(np.asarray(got["embeddings"]), vectors)
    assert [c.chunk_id for c in v.chunks] == got["ids"]
    health = check_version(cfg, layout, version, current=False)
    assert health.ok and (health.chunks, health.documents) == (5, 2)


def test_a_crash_inside_the_build_leaves_a_leftover_and_no_version(legacy):
    cfg, docs, chunks, vectors = legacy
    layout = Layout(cfg)

    def crash(point: str) -> None:
        if point == "index:chroma":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build(cfg, docs, chunks, vectors, mark=crash)
    assert layout.published_versions() == [] and [p.name for p in layout.leftovers()] == [".tmp-v000001"]
    assert publish.sweep_leftovers(layout, cfg.index.chroma) == [".tmp-v000001", "legacy-10950c2f4f-v000001"]
    assert build(cfg, docs, chunks, vectors) == "v000001"  # the next run builds it whole


def test_a_version_writes_a_chroma_collection_only_where_one_is_read(tmp_path, write_files, make_config):
    """Default (vector search auto): no collection, the manifest says so, the version verifies and answers.
    A config that reads Chroma (vector_search.mode: chroma) finds the version outdated, and the ingest writes a
    new one with a collection; a no-collection version asked for its collection is one line."""
    from ragrig.configs.errors import InputError
    from ragrig.retrieval.index import chroma
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever

    corpus = write_files(tmp_path / "corpus", {"a.md": "# Alpha\n\n## Move\n\nMove six inches.\n",
                                               "b.md": "# Beta\n\n## Cover\n\nCover gives a save.\n"})
    cfg = make_config(corpus)
    assert not chroma.writes_collection(cfg)
    stats = IngestPipeline(cfg, progress=False).run()
    v = IndexVersion.current(cfg)
    assert v.manifest["chroma"]["collection"] is None and v.collection_name is None
    assert stats.seconds["index:chroma"] < 0.05  # nothing written
    layout = Layout(cfg)
    store = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)
    assert [n for n in chroma.list_collections(store) if n.startswith(layout.key)] == []
    assert check_version(cfg, layout, "v000001", current=True).problems == []
    assert Retriever(cfg).search("how far can I move").hits[0].doc_id == "a.md"
    with pytest.raises(InputError, match=r"has no Chroma collection: only index.vector_search.mode: chroma or "
                                         r"index.chroma.mode: http write one"):
        v.collection()

    reads = make_config(corpus, "index.vector_search.mode=chroma")
    assert chroma.writes_collection(reads)
    again = IngestPipeline(reads, progress=False).run()
    assert again.version == "v000002" and again.chunks_embedded == 0  # vectors from the cache
    assert any("has no Chroma collection" in w for w in again.warnings)
    v2 = IndexVersion.current(reads)
    assert v2.collection().count() == v2.manifest["counts"]["chunks"] == 2
    assert Retriever(reads).search("how far can I move").hits[0].doc_id == "a.md"
    assert IngestPipeline(reads, progress=False).run().version == "v000002"  # and now it is current
