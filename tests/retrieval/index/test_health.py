"""`ragrig health`: consistent stores pass; each kind of inconsistency is found and exits 1."""

from __future__ import annotations

import pytest
from ragrig.flows.cli import main
from ragrig.retrieval.index.health import check_index
from ragrig.retrieval.index.version import IndexVersion

pytestmark = pytest.mark.slow

DOCS = {
    "a.md": "# Alpha\n\n## Moving\n\nMove six inches.\n\n## Charging\n\nCharge into engagement range.\n",
    "b.md": "# Beta\n\n## Shooting\n\nRoll attack dice against a visible target.\n",
}


@pytest.fixture
def indexed(published, make_config):
    """DOCS published in this test's home (a copy of one ingest per test process: conftest ``published``)."""
    corpus = published(DOCS, "index.vector_search.mode=chroma")  # health checks the collection too
    return make_config(corpus, "index.vector_search.mode=chroma"), corpus


def sets(corpus) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]",
            "--set", "index.vector_search.mode=chroma"]


def test_healthy_index_passes(indexed, capsys):
    cfg, corpus = indexed
    h = check_index(cfg)
    assert h.ok and [v.version for v in h.versions] == ["v000001"] and h.versions[0].chunks == 3
    assert main(["health", *sets(corpus)]) == 0
    assert "healthy" in capsys.readouterr().out


def test_missing_chroma_vector_is_found(indexed, capsys):
    cfg, corpus = indexed
    v = IndexVersion.current(cfg)
    v.collection().delete(ids=["a.md#1"])
    h = check_index(cfg)
    assert not h.ok and "Chroma ids differ from the chunks table: 1 missing, 0 extra" in h.versions[0].problems
    assert main(["health", *sets(corpus)]) == 1
    assert "INCONSISTENT" in capsys.readouterr().out


def test_duplicated_and_miscounted_chunks_are_found(indexed):
    cfg, _ = indexed
    v = IndexVersion.current(cfg)
    table = v.dir / "chunks.jsonl"
    lines = table.read_text().splitlines()
    table.write_text("\n".join(lines + [lines[0]]) + "\n")
    problems = check_index(cfg).versions[0].problems
    assert any("duplicate chunk ids" in p for p in problems)
    assert any("manifest says 3 chunks, the table has 4" in p for p in problems)
    assert any("BM25 index has 3 documents" in p for p in problems)


def test_no_index_is_unhealthy(tmp_path, make_config, capsys):
    corpus = tmp_path / "empty"
    corpus.mkdir()
    assert main(["health", *sets(corpus)]) == 1
    assert "no published version" in capsys.readouterr().out


def test_damaged_or_zeroed_vectors_are_found_and_refused(indexed):
    """The version's own vectors: a zeroed row is named by health (besides the hash mismatch), and a reader
    refuses the version rather than search it."""
    import numpy as np
    from ragrig.configs.errors import IndexDamagedError

    cfg, _ = indexed
    v = IndexVersion.current(cfg)
    path = v.dir / "vectors.npy"
    vecs = np.load(path)
    assert vecs.shape == (3, 384) and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    vecs[1] = 0
    np.save(path, vecs)
    v.release()
    problems = check_index(cfg).versions[0].problems
    assert "vectors.npy has 1 rows that are not finite unit vectors" in problems
    assert any("vectors.npy does not match the manifest" in p for p in problems)
    with pytest.raises(IndexDamagedError, match="vectors.npy"):
        IndexVersion.current(cfg)
