"""Issue 30, item 2: a damaged ``chroma.sqlite3`` is repaired by ``ragrig ingest``, as health and query say.

Before: after one 4 KB page of the store was overwritten, ``health`` and ``query`` said "`ragrig ingest`
rebuilds a damaged current version", but ``ingest`` and ``ingest --force`` both exited 1 ("database disk image
is malformed"); only ``reset --yes`` recovered, throwing the embedding cache away. Now ingest moves the store
aside and rebuilds every published version's collection from its chunks and the embedding cache (nothing is
embedded again), and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ragrig.flows.cli import main
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.layout import Layout

DOCS = {
    "a.md": "# Alpha\n\n## Moving\n\nMove six inches.\n\n## Charging\n\nCharge into engagement range.\n",
    "b.md": "# Beta\n\n## Shooting\n\nRoll attack dice against a visible target.\n",
}


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def overwrite_page(path: Path, page: int, size: int = 4096) -> None:
    with open(path, "r+b") as fh:
        fh.seek(page * size)
        fh.write(b"\xde\xad\xbe\xef" * (size // 4))


@pytest.mark.parametrize("force", [False, True], ids=["ingest", "ingest --force"])
def test_ingest_repairs_a_damaged_chroma_sqlite_from_the_version_and_the_embedding_cache(force, tmp_path,
                                                                                        write_files, make_config,
                                                                                        capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus)
    layout = Layout(cfg)
    # a version written by a config that reads Chroma has a collection in the store (the default writes none)
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus), "--set", "index.vector_search.mode=chroma"]) == 0
    chroma.forget_client(cfg.index.chroma, layout.chroma_dir)  # as a new process: nothing cached, WAL merged
    store = layout.chroma_dir / "chroma.sqlite3"
    overwrite_page(store, 3)
    capsys.readouterr()

    rc = main(["health", *sets(corpus)])
    out, _ = capsys.readouterr()
    assert rc == 1 and "`ragrig ingest` rebuilds a damaged current version" in out, out

    stats_file = tmp_path / "stats.json"
    rc = main(["ingest", "--no-prefect", "-q", *(["--force"] if force else []), *sets(corpus),
               "--output-json", str(stats_file)])
    _, err = capsys.readouterr()
    assert rc == 0, err  # before: exit 1, "database disk image is malformed"
    stats = json.loads(stats_file.read_text())
    assert stats["chunks_embedded"] == 0, stats  # every vector came from the cache
    assert stats["published"] is force and stats["version"] == ("v000002" if force else "v000001"), stats
    note = next(w for w in stats["warnings"] if "Chroma store" in w)
    assert f"the Chroma store {layout.chroma_dir} is damaged (database disk image is malformed)" in note, note
    assert "rebuilt the collections of v000001 from their chunks and stored vectors" in note, note
    aside = [p for p in layout.index_dir.iterdir() if p.name.startswith("chroma.damaged-")]
    assert len(aside) == 1 and aside[0].name in note and (aside[0] / "chroma.sqlite3").is_file()  # kept, not lost

    rc = main(["health", *sets(corpus)])
    out, _ = capsys.readouterr()
    assert rc == 0 and "healthy" in out, out
    assert main(["query", "move", "--json", "--local", *sets(corpus)]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["doc_id"] == "a.md" and hits[0]["header_path"][-1] == "Moving", hits[0]
    # and the next ingest finds nothing to repair
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus), "--output-json", str(stats_file)]) == 0
    again = json.loads(stats_file.read_text())
    assert not again["published"] and not any("Chroma store" in w for w in again["warnings"]), again


def test_store_damage_names_sqlites_reason_and_is_none_for_a_whole_store(tmp_path):
    import sqlite3

    from ragrig.retrieval.ingest.restore import store_damage

    assert store_damage(tmp_path) is None  # no store
    db = sqlite3.connect(tmp_path / "chroma.sqlite3")
    db.execute("CREATE TABLE t (x)")
    db.executemany("INSERT INTO t VALUES (?)", [("x" * 500,) for _ in range(200)])
    db.commit()
    db.close()
    assert store_damage(tmp_path) is None
    overwrite_page(tmp_path / "chroma.sqlite3", 2)
    assert store_damage(tmp_path)  # SQLite's words, e.g. "database disk image is malformed"
