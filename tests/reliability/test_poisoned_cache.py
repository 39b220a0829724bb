"""Issue 19, item 1: a file edited while an ingest runs never poisons the extraction cache or the index.

Discovery hashes a file; extraction reads it again. The race is driven deterministically: the pipeline's hook
rewrites the file right after the plan stage, so extraction reads other bytes than discovery hashed. The
document must be stored under the hash of the bytes extracted (never text under another content's hash), so
reverting the file is seen as a change and the index follows the file; a cache entry that cannot prove it
was made from the bytes its key names is never served.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from ragrig.retrieval.documents import sha256_bytes
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline

pytestmark = pytest.mark.slow

ORIGINAL = "# Rules\n\n## Moving\n\nA model moves six inches in the movement phase.\n"
EDITED = "# Rules\n\n## Moving\n\nA model moves eight inches with the zephyrine banner.\n"
REWRITTEN = "# Rules\n\n## Moving\n\nA model teleports with the quixotic amulet.\n"


def ingest(cfg, embedder, hook=None, force=False):
    pipe = IngestPipeline(cfg, hook=hook, force=force)
    pipe.embedder = embedder
    return pipe.run()


def indexed_text(cfg) -> str:
    v = IndexVersion.current(cfg)
    try:
        return v.documents_by_id["rules.md"].markdown
    finally:
        v.release()


def test_a_file_rewritten_after_the_plan_is_indexed_as_read_and_reverting_it_is_a_change(
        tmp_path, make_config, embedder):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    path = corpus / "rules.md"
    path.write_text(ORIGINAL)
    cfg = make_config(corpus, corpus__markdown_extractor="plain")
    assert ingest(cfg, embedder).version == "v000001"

    path.write_text(EDITED)  # discovery hashes EDITED ...

    def rewrite_after_plan(point: str) -> None:
        if point == "after:plan":
            path.write_text(REWRITTEN)  # ... and extraction reads REWRITTEN

    stats = ingest(cfg, embedder, hook=rewrite_after_plan)
    assert stats.version == "v000002"
    v = IndexVersion.current(cfg)
    doc = v.documents_by_id["rules.md"]
    assert "quixotic amulet" in doc.markdown
    assert doc.sha256 == sha256_bytes(REWRITTEN.encode())  # keyed by what was extracted, not by what was hashed
    v.release()
    assert any("changed while being ingested" in w for w in stats.warnings), stats.warnings

    # the file goes back to the content discovery hashed in the raced run: a change, and the index follows
    path.write_text(EDITED)
    stats = ingest(cfg, embedder)
    assert stats.published and stats.docs_changed == 1, stats
    assert "zephyrine banner" in indexed_text(cfg) and "quixotic" not in indexed_text(cfg)
    # and so do --force and a new chunking config, through the cache
    ingest(cfg, embedder, force=True)
    assert "zephyrine banner" in indexed_text(cfg)
    other = make_config(corpus, corpus__markdown_extractor="plain", chunking__max_header_level=2)
    ingest(other, embedder)
    assert "zephyrine banner" in indexed_text(other)


def test_a_cache_entry_that_does_not_prove_its_key_is_never_served(tmp_path, make_config, embedder):
    """An entry as the old code wrote it after the race: one file's text under another content's hash."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "rules.md").write_text(EDITED)
    cfg = make_config(corpus, corpus__markdown_extractor="plain")
    from ragrig.retrieval.index.layout import Layout
    from ragrig.retrieval.ingest.extract import extractor_for

    cache = Layout(cfg).extract_cache
    cache.parent.mkdir(parents=True)
    db = sqlite3.connect(cache)
    db.execute("CREATE TABLE docs (sha TEXT, extractor TEXT, body TEXT, PRIMARY KEY (sha, extractor))")
    poisoned = {"format": "md", "markdown": REWRITTEN, "metadata": {"format": "md"}, "warnings": []}
    db.execute("INSERT INTO docs VALUES (?, ?, ?)",
               (sha256_bytes(EDITED.encode()), extractor_for(cfg).cache_key, json.dumps(poisoned)))
    db.commit()
    db.close()
    ingest(cfg, embedder)
    assert "zephyrine banner" in indexed_text(cfg) and "quixotic" not in indexed_text(cfg)

    # the entry the ingest wrote proves its key; one edited in place afterwards no longer does
    db = sqlite3.connect(cache)
    (body,) = db.execute("SELECT body FROM docs").fetchone()
    entry = json.loads(body)
    assert entry["source_sha256"] == sha256_bytes(EDITED.encode())
    entry["markdown"] = REWRITTEN
    db.execute("UPDATE docs SET body = ?", (json.dumps(entry),))
    db.commit()
    db.close()
    ingest(cfg, embedder, force=True)
    assert "zephyrine banner" in indexed_text(cfg) and "quixotic" not in indexed_text(cfg)
