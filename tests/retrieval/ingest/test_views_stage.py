"""Ingest's views stage: the views a config fuses are embedded at ingest (through the embedding cache), so a
reader's first query embeds no document; a view weighted after the version was built is embedded by the next
plain ingest, which publishes nothing new; once recorded (views.json), an unchanged re-ingest skips the stage;
views not weighted cost nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from ragrig.configs.load import load_config
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.ingest.views import section_groups

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "search"))
from test_retriever import CORPUS, overrides  # noqa: E402

VIEWS = ["retrieval.fusion.weights.vector2=1", "retrieval.fusion.weights.section=1"]  # vector2: the default


def _ingest(cfg, embedder):
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder  # the session's loaded model (same model id)
    return pipe.run()


def _no_document_embedding(monkeypatch):
    """Any document (not query) embedding from here on fails the test."""
    from ragrig.retrieval.embedding import Embedder

    def refuse(self, texts, *a, **k):
        raise AssertionError(f"{self.id} embedded {len(texts)} document text(s) after the ingest")

    monkeypatch.setattr(Embedder, "encode_sorted", refuse)


@pytest.mark.slow
def test_fused_views_are_embedded_at_ingest_and_only_read_by_queries(tmp_path, embedder, monkeypatch):
    from ragrig.retrieval.search.retriever import Retriever

    corpus = tmp_path / "corpus"
    for rel, text in CORPUS.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text, encoding="utf-8")
    common = [*overrides(corpus, tmp_path / "home"), "retrieval.max_hops=0", "chunking.max_tokens=24"]
    base = load_config(overrides=[*common, "retrieval.fusion.weights.vector2=0"])
    stats = _ingest(base, embedder)
    assert stats.published and stats.views_embedded == {} and "views" not in stats.seconds  # none weighted

    # weighted after the version was built: the next plain ingest keeps the version and embeds the views
    cfg = load_config(overrides=[*common, *VIEWS])
    again = _ingest(cfg, embedder)
    assert not again.published and again.version == stats.version
    r0 = Retriever(cfg, embedder=embedder)
    sections = len(section_groups(r0.chunks)[0])
    unsplit = sum(1 for c in r0.chunks if c.part == 0)  # their section text is their chunk's: a cache hit
    assert again.views_embedded == {"section": sections - unsplit, "vector2": stats.chunks} and sections > unsplit
    assert again.seconds["views"] > 0

    # a reader only reads them: no document is embedded by a query through both views
    _no_document_embedding(monkeypatch)
    r = Retriever(cfg, embedder=embedder)
    res = r.search("what does a weapon rule do", use_cache=False)
    assert {"section", "vector2"} <= set(res.candidates) and res.hits
    assert r.sources.views.second("bge-small-en-v1.5", "auto").matrix.shape == (stats.chunks, 384)
    assert np.isfinite(r.sources.views.section.matrix).all()
    # another plain ingest skips the stage: views.json says this version's views were embedded by these encoders,
    # so it neither loads the version's chunks nor reads their vectors back (the nothing-changed fast path)
    from ragrig.retrieval.index.layout import Layout
    from ragrig.retrieval.index.version import IndexVersion

    monkeypatch.setattr(IndexVersion, "chunks", property(lambda self: pytest.fail("the chunk table was loaded")))
    skipped = _ingest(cfg, embedder)
    assert not skipped.published and skipped.views_embedded == {} and "views" not in skipped.seconds
    monkeypatch.undo()
    # without the record (or with another second model recorded) the stage runs and finds every vector cached
    views_file = Layout(cfg).views_file
    record = json.loads(views_file.read_text())
    assert record["version"] == stats.version and record["views"]["section"] == embedder.id
    assert record["views"]["vector2"].startswith("BAAI/bge-small-en-v1.5") and len(record["views"]) == 2
    views_file.write_text(json.dumps({**record, "views": {**record["views"], "vector2": "another-model"}}))
    assert _ingest(cfg, embedder).views_embedded == {"section": 0, "vector2": 0}
    views_file.unlink()
    assert _ingest(cfg, embedder).views_embedded == {"section": 0, "vector2": 0} and views_file.is_file()
