"""Issue 30, item 3: vectors read from the embedding cache are verified before an index is built from them.

Before: with the cache's rows overwritten by zero vectors at the right dimension, ``ingest --force`` built a new
version from them, ``health`` called it healthy and queries returned unrelated sections; NaN rows ended in a
Chroma error that did not name the cache. Now each entry carries a checksum and is checked for length, finite
values and (normalising model) a unit norm; a bad entry is re-embedded with a warning naming the cache.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from ragrig.flows.cli import main
from ragrig.retrieval.index.layout import Layout

DOCS = {
    "a.md": "# Alpha\n\n## Moving\n\nMove six inches across open ground.\n\n"
            "## Charging\n\nCharge into engagement range of an enemy.\n",
    "b.md": "# Beta\n\n## Shooting\n\nRoll attack dice against a visible target.\n\n"
            "## Cover\n\nA model in cover gets an extra defence die.\n",
}


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def overwrite_vectors(path: Path, make) -> int:
    db = sqlite3.connect(path)
    rows = db.execute("SELECT model, sha, dim FROM vectors").fetchall()
    for model, sha, dim in rows:
        db.execute("UPDATE vectors SET vec=? WHERE model=? AND sha=?", [make(dim).tobytes(), model, sha])
    db.commit()
    db.close()
    return len(rows)


@pytest.mark.parametrize("poison", ["zeros", "nan", "other vector, checksum kept"])
def test_a_poisoned_cache_entry_is_re_embedded_with_a_warning_never_used(poison, tmp_path, write_files, capsys,
                                                                         make_config):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus)
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus)]) == 0
    cache = Layout(cfg).embedding_cache
    rng = np.random.default_rng(0)

    def make(dim: int) -> np.ndarray:
        if poison == "zeros":
            return np.zeros(dim, dtype=np.float32)
        if poison == "nan":
            return np.full(dim, np.nan, dtype=np.float32)
        v = rng.normal(size=dim).astype(np.float32)  # a plausible unit vector, not this text's
        return v / np.linalg.norm(v)

    n = overwrite_vectors(cache, make)
    assert n == 8  # 4 chunks under each encoder: the index's and the second one's (the default vector2 view)
    stats_file = tmp_path / "stats.json"
    capsys.readouterr()
    rc = main(["ingest", "--no-prefect", "-q", "--force", *sets(corpus), "--output-json", str(stats_file)])
    _, err = capsys.readouterr()
    assert rc == 0, err
    stats = json.loads(stats_file.read_text())
    assert stats["published"] and stats["chunks_embedded"] == 4 and stats["chunks_cached"] == 0, stats
    assert stats["views_embedded"] == {"vector2": 4}, stats  # the view's poisoned rows too
    why = {"zeros": "4 a zero vector", "nan": "4 NaN or infinite values",
           "other vector, checksum kept": "4 checksum mismatch"}[poison]
    warned = [w for w in stats["warnings"] if f"embedding cache {cache}" in w and why in w and "re-embedded" in w]
    assert len(warned) == 2, stats["warnings"]  # one per encoder

    rc = main(["health", *sets(corpus)])
    assert rc == 0
    for query, doc, header in (("how far do I move", "a.md", "Moving"), ("extra defence die", "b.md", "Cover")):
        capsys.readouterr()
        assert main(["query", query, "--json", "--local", *sets(corpus)]) == 0
        top = json.loads(capsys.readouterr().out)["hits"][0]
        assert (top["doc_id"], top["header_path"][-1]) == (doc, header), top

    # the re-embedded vectors were written back with their checksums: the next forced build uses them
    capsys.readouterr()
    assert main(["ingest", "--no-prefect", "-q", "--force", *sets(corpus), "--output-json", str(stats_file)]) == 0
    again = json.loads(stats_file.read_text())
    assert again["chunks_embedded"] == 0 and not any("embedding cache" in w for w in again["warnings"])
    assert again["views_embedded"] == {"vector2": 0}


def test_check_vector_reasons():
    from ragrig.retrieval.cache.embeddings import check_vector

    unit = np.array([0.6, 0.8], dtype=np.float32)
    assert check_vector(unit, 2, True) is None
    assert check_vector(unit * 2, 2, False) is None
    assert check_vector(unit * 2, 2, True) == "norm 2, the model normalises to 1"
    assert check_vector(unit, 3, True) == "2 values, the model has 3"
    assert check_vector(np.array([np.inf, 0], dtype=np.float32), 2, False) == "NaN or infinite values"
    assert check_vector(np.zeros(2, dtype=np.float32), 2, False) == "a zero vector"


def test_a_cache_from_before_checksums_is_checked_by_value_and_given_checksums(tmp_path):
    from ragrig.retrieval.cache.embeddings import EmbeddingCache

    path = tmp_path / "e.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE vectors (model TEXT, sha TEXT, dim INTEGER, vec BLOB, PRIMARY KEY (model, sha))")
    unit = np.array([0.6, 0.8], dtype=np.float32)
    db.executemany("INSERT INTO vectors VALUES (?, ?, ?, ?)",
                   [("m", "ok", 2, unit.tobytes()), ("m", "zero", 2, np.zeros(2, np.float32).tobytes())])
    db.commit()
    db.close()
    cache = EmbeddingCache(path)
    good, bad, unsummed = cache.get_checked("m", ["ok", "zero"], dim=2, normalized=True)
    assert list(good) == ["ok"] and bad == {"zero": "a zero vector"} and unsummed == ["ok"]
    cache.put_many("m", [("ok", good["ok"])])
    assert cache.get_checked("m", ["ok"], dim=2, normalized=True)[2] == []
    cache.close()
