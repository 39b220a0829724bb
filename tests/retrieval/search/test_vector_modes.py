"""The retriever end to end with each vector search (exact, the seeded HNSW, Chroma) on a small ingested corpus:
the same rankings with and without filters, the HNSW graph written by ingest when the version will be searched
approximately, and a version written before versions stored their vectors (Chroma answers it; the next ingest
writes a new version that stores them)."""

from __future__ import annotations

import json

import pytest
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.index.format import MANIFEST, VECTORS, file_hashes
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.retriever import Retriever

pytestmark = pytest.mark.slow

DOCS = {
    "rules/moving.md": "# Moving\n\n## Dash\n\nMove up to three inches in a straight line.\n\n## Charge\n\n"
                       "Move up to six inches and end within engagement range of an enemy.\n",
    "rules/shooting.md": "# Shooting\n\n## Cover\n\nA target behind a wall gets one extra defence die.\n\n"
                         "## Obscured\n\nA target in smoke cannot be seen beyond six inches.\n",
    "lore/wardens.md": "# Iron Wardens\n\nArmoured veterans who hold the line and never fall back.\n",
}
READ_BY_CHROMA = "index.vector_search.mode=chroma"  # the version then writes a collection for Chroma's search
QUERIES = ["how far can I charge", "smoke blocks line of sight", "armoured veterans", "extra defence dice"]


@pytest.fixture
def ingested(tmp_path, write_files, make_config, embedder):
    corpus = write_files(tmp_path / "corpus", DOCS)

    def ingest(*sets: str):
        cfg = make_config(corpus, "retrieval.max_hops=0", *sets)
        pipe = IngestPipeline(cfg)
        pipe.embedder = embedder
        return cfg, pipe.run()

    return ingest


def rankings(cfg, embedder, mode: str, filters: Filters | None = None) -> tuple[str, list[list[str]]]:
    r = Retriever(cfg.model_copy(update={"index": cfg.index.model_copy(update={
        "vector_search": cfg.index.vector_search.model_copy(update={"mode": mode})})}), embedder=embedder)
    try:
        results = r.search_many(QUERIES, filters=filters) if filters else r.search_many(QUERIES)
        return r.vector_search, [[h.chunk_id for h in res.hits] for res in results]
    finally:
        r.version.release()


def test_every_search_gives_the_same_rankings_with_and_without_filters(ingested, embedder):
    cfg, stats = ingested(READ_BY_CHROMA)
    assert stats.published
    v = IndexVersion.current(cfg)
    assert (v.dir / VECTORS).is_file() and v.manifest["vectors"]["hnsw"] is None  # 5 chunks: exact, no graph
    v.release()
    exact = rankings(cfg, embedder, "exact")
    assert exact[0] == "exact" and all(exact[1])
    assert rankings(cfg, embedder, "auto") == exact  # auto under the threshold is exact
    assert rankings(cfg, embedder, "hnsw") == ("hnsw", exact[1])  # no graph on disk: built in memory, same answers
    assert rankings(cfg, embedder, "chroma") == ("chroma", exact[1])
    rules = Filters(path="rules/**")
    filtered = rankings(cfg, embedder, "exact", rules)
    assert all(h.startswith("rules/") for hits in filtered[1] for h in hits) and all(filtered[1])
    for mode in ("hnsw", "chroma"):
        assert rankings(cfg, embedder, mode, rules)[1] == filtered[1]


def test_ingest_writes_the_graph_when_the_version_will_be_searched_approximately(ingested, embedder):
    cfg, stats = ingested("index.vector_search.exact_max_chunks=2")
    v = IndexVersion.current(cfg)
    assert v.manifest["vectors"]["hnsw"] == {"connectivity": 16, "expansion_add": 128}
    assert (v.dir / "vectors.hnsw").is_file() and "vectors.hnsw" in v.manifest["files"]
    v.release()
    kind, approx = rankings(cfg, embedder, "auto")
    assert kind == "hnsw" and approx == rankings(cfg, embedder, "exact")[1]
    # the same config again: nothing changed, nothing written; other graph parameters: a new version with them
    assert not ingested("index.vector_search.exact_max_chunks=2")[1].published
    cfg2, stats2 = ingested("index.vector_search.exact_max_chunks=2", "index.vector_search.hnsw.connectivity=8")
    assert stats2.published and any("no HNSW graph built with this config's parameters" in w for w in stats2.warnings)
    v2 = IndexVersion.current(cfg2)
    assert v2.version == "v000002" and v2.manifest["vectors"]["hnsw"]["connectivity"] == 8
    v2.release()


def test_a_version_without_stored_vectors_is_searched_by_chroma_and_rewritten_by_the_next_ingest(ingested,
                                                                                                   embedder):
    cfg, _ = ingested(READ_BY_CHROMA)
    layout = Layout(cfg)
    vdir = layout.version_dir("v000001")
    (vdir / VECTORS).unlink()  # what a version written before vectors.npy looks like
    manifest = json.loads((vdir / MANIFEST).read_text())
    del manifest["vectors"]
    manifest["files"] = file_hashes(vdir)
    (vdir / MANIFEST).write_text(json.dumps(manifest))
    kind, hits = rankings(cfg, embedder, "auto")
    assert kind == "chroma" and all(hits)
    _, stats = ingested(READ_BY_CHROMA)
    assert stats.published and any("was written before versions stored their vectors" in w for w in stats.warnings)
    assert stats.chunks_embedded == 0  # every vector came from the embedding cache
    v = IndexVersion.current(cfg)
    assert v.version == "v000002" and (v.dir / VECTORS).is_file()
    v.release()
    assert rankings(cfg, embedder, "auto") == ("exact", hits)
