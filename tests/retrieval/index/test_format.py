"""The index format: the writer's files read back as written, and a version written before the format moved
into index/format.py (tests/fixtures/index-v1, by the ingest of commit eeb43a6) still opens, file for file."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from ragrig.configs.errors import IndexNotFoundError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.format import (
    CHUNKS,
    CONFIG,
    DOCUMENTS,
    KEYWORDS,
    MANIFEST,
    collection_name,
    collection_version,
    new_manifest,
    read_chunks,
    read_documents,
    read_keywords,
    read_manifest,
    table_shas,
    write_config,
    write_keywords,
    write_manifest,
    write_tables,
)
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion

LEGACY = Path(__file__).resolve().parents[2] / "fixtures" / "index-v1"
LEGACY_IDS = ["a.md#0", "a.md#1", "a.md#2", "sub/b.md#0", "sub/b.md#1"]


def legacy_config() -> RagrigConfig:
    """The config the fixture was built with (its config.yaml; the home comes from RAGRIG_HOME), less its flow
    section: runner settings, renamed since (configs/models.py RENAMED) and no part of what an index holds."""
    data = yaml.safe_load((LEGACY / "v000001" / CONFIG).read_text())
    data.pop("flow")
    return RagrigConfig.model_validate(data)


def install_legacy(cfg: RagrigConfig) -> Layout:
    layout = Layout(cfg)
    shutil.copytree(LEGACY / "v000001", layout.version_dir("v000001"))
    layout.current_file.write_text("v000001\n")
    return layout


def doc(doc_id: str, markdown: str) -> Document:
    return Document(doc_id=doc_id, sha256=f"sha-{doc_id}", format="md", markdown=markdown, metadata={"format": "md"},
                    extractor="md=docling")


def chunk(doc_id: str, n: int, header_path: list[str], text: str) -> Chunk:
    search = "\n".join([" > ".join(header_path), text])
    return Chunk(chunk_id=f"{doc_id}#{n}", doc_id=doc_id, header_path=header_path, level=len(header_path), start=0,
                 end=len(text), text=text, search_text=search, sha256=f"sha-{doc_id}#{n}", tokens=3,
                 metadata={"format": "md", "title": "Tïtle ☃"})


DOCS = [doc("a.md", "# A\n\nOne.\n\n## B\n\nTwo.\n"), doc("b.md", "# C\n\nThree.\n")]
CHUNKS_ = [chunk("a.md", 0, ["A"], "One."), chunk("a.md", 1, ["A", "B"], "Two."), chunk("b.md", 0, ["C"], "Three.")]


def test_collection_names_belong_to_one_index():
    assert collection_name("sample-abc", "v000002") == "sample-abc-v000002"
    assert collection_version("sample-abc", "sample-abc-v000002") == "v000002"
    assert collection_version("sample-abc", "sample-abcd-v000002") is None  # another index's key
    assert collection_version("sample-abc", "other-v000001") is None


def test_tables_keywords_and_manifest_read_back_as_written(tmp_path, make_config):
    cfg = make_config(tmp_path)
    write_tables(tmp_path, DOCS, CHUNKS_)
    write_keywords(tmp_path, {"version": 1, "min_length": 4, "terms": [{"term": "Three", "kind": "phrase"}]})
    manifest = new_manifest(cfg, version="v000007", index_key="k-1", corpus_kind="directory", model_id="m", dim=3,
                            docs=DOCS, chunks=CHUNKS_)
    write_manifest(tmp_path, manifest)
    assert list(read_documents(tmp_path)) == DOCS
    assert read_chunks(tmp_path) == CHUNKS_
    assert read_keywords(tmp_path)["terms"] == [{"term": "Three", "kind": "phrase"}]
    assert read_manifest(tmp_path) == manifest
    # one JSON object per line, non-ASCII kept as is
    lines = (tmp_path / CHUNKS).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and json.loads(lines[1])["chunk_id"] == "a.md#1" and "Tïtle ☃" in lines[0]
    assert manifest["counts"] == {"documents": 2, "chunks": 3}
    assert manifest["chroma"] == {"mode": "embedded", "collection": None}  # nothing reads one (chroma.py)
    reads = make_config(tmp_path, "index.vector_search.mode=chroma")
    named = new_manifest(reads, version="v000007", index_key="k-1", corpus_kind="directory", model_id="m", dim=3,
                         docs=DOCS, chunks=CHUNKS_)
    assert named["chroma"] == {"mode": "embedded", "collection": "k-1-v000007"}
    assert manifest["embedding"] == {"model_id": "m", "dim": 3, "model": "all-MiniLM-L6-v2"}
    assert manifest["chunk_ids_sha256"] == hashlib.sha256(b"a.md#0\na.md#1\nb.md#0").hexdigest()
    assert manifest["documents_sha256"] == hashlib.sha256(b"a.md\tsha-a.md\nb.md\tsha-b.md").hexdigest()
    assert "corpus_file" not in manifest
    assert table_shas(tmp_path) == ({"sha-a.md#0", "sha-a.md#1", "sha-b.md#0"}, {"sha-a.md", "sha-b.md"})


def test_a_folder_without_keywords_reads_an_empty_library_and_without_manifest_is_no_version(tmp_path, make_config):
    assert read_keywords(tmp_path) == {"terms": []}
    cfg = make_config(tmp_path)
    Layout(cfg).version_dir("v000001").mkdir(parents=True)
    with pytest.raises(IndexNotFoundError, match="incomplete"):
        IndexVersion(cfg, Layout(cfg), "v000001")


def test_a_version_written_before_the_format_module_opens():
    cfg = legacy_config()
    layout = install_legacy(cfg)
    v = IndexVersion.current(cfg)
    assert (v.version, v.dir, v.layout.key) == ("v000001", layout.version_dir("v000001"), "legacy-10950c2f4f")
    assert v.manifest["counts"] == {"documents": 2, "chunks": 5}
    assert v.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert v.collection_name == "legacy-10950c2f4f-v000001" == collection_name(layout.key, "v000001")
    assert [c.chunk_id for c in v.chunks] == LEGACY_IDS
    assert v.chunk_index["sub/b.md#1"] == 4
    assert v.chunks[2].search_text == "Alpha > Charging\nCharge into engagement range. Shield Wall holds."
    assert v.chunks[0].metadata == {"title": "Alpha Rules", "category": "core", "format": "md"}
    assert sorted(v.documents_by_id) == ["a.md", "sub/b.md"]
    # "Shield Wall": one header title; mentioned once in a.md#2's text, twice in sub/b.md#0's (header line, body)
    assert v.keywords["terms"][0] == {"term": "Shield Wall", "kind": "phrase", "header_count": 1, "text_count": 3,
                                      "count": 4}
    bm25 = Bm25Index.load(v.bm25_dir, cfg.index.bm25)
    assert bm25.size == 5
    assert bm25.search(bm25.tokenizer("engagement"), 5)[0][0] == 2  # rows follow the chunks table
    assert len(bm25.search(bm25.tokenizer("engagement"), 5)) == 1


def test_the_writer_reproduces_a_legacy_version_byte_for_byte(tmp_path, drop_added_settings,
                                                               legacy_writes_collection):
    """Same documents and chunks in, same files out: the tables, the keyword library, the config, and the
    manifest but for its time stamp."""
    from ragrig.retrieval.ingest.keyword_mining import build_library
    from ragrig.retrieval.markdown import parse_headers

    cfg = legacy_config()
    legacy = LEGACY / "v000001"
    docs, chunks = list(read_documents(legacy)), read_chunks(legacy)
    out = tmp_path / "v000001"
    out.mkdir()
    write_tables(out, docs, chunks)
    titles = [h.title for d in docs for h in parse_headers(d.markdown)]
    write_keywords(out, build_library(titles, [c.text for c in chunks]))
    write_config(out, cfg)
    before = read_manifest(legacy)
    write_manifest(out, new_manifest(cfg, version="v000001", index_key=cfg.index_key(), corpus_kind="directory",
                                     model_id=before["embedding"]["model_id"], dim=384, docs=docs, chunks=chunks))
    for name in (DOCUMENTS, CHUNKS, KEYWORDS):
        assert (out / name).read_bytes() == (legacy / name).read_bytes(), name
    # the resolved config: a setting added since the fixture shows its default, the rest is as written
    got, want = yaml.safe_load((out / CONFIG).read_text()), yaml.safe_load((legacy / CONFIG).read_text())
    drop_added_settings(got)
    assert got == want
    after = read_manifest(out)
    assert after.pop("created") and before.pop("created")
    # added since: where the version's own vectors are (the legacy version has none: Chroma answers it)
    assert after.pop("vectors") == {"file": "vectors.npy", "dtype": "float32", "hnsw": None}
    assert after.pop("bm25") == {"shards": 1}  # added since: how many BM25 shards
    assert after == before
    # the same layout, plus the vectors entry's five lines ("vectors": {, its three keys, }) and bm25's three
    assert (out / MANIFEST).read_text().count("\n") == (legacy / MANIFEST).read_text().count("\n") + 5 + 3
