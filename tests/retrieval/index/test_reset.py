"""`ragrig reset --yes` removes one config's index and the cache entries only it uses, nothing else."""

from __future__ import annotations

import sqlite3

import pytest
from ragrig.flows.cli import main
from ragrig.retrieval.index.health import check_index
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.pipeline import IngestPipeline

pytestmark = pytest.mark.slow

SHARED = "# Shared\n\n## Same\n\nThis section is in both corpora.\n"


def rows(db, table):
    con = sqlite3.connect(db)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_reset_removes_only_this_config(tmp_path, write_files, make_config, embedder, capsys):
    a = write_files(tmp_path / "a", {"s.md": SHARED, "only-a.md": "# A\n\n## Alone\n\nOnly in corpus a.\n"})
    b = write_files(tmp_path / "b", {"s.md": SHARED})
    cfg_a, cfg_b = make_config(a), make_config(b)
    for cfg in (cfg_a, cfg_b):
        pipe = IngestPipeline(cfg)
        pipe.embedder = embedder
        assert pipe.run().published
    la, lb = Layout(cfg_a), Layout(cfg_b)
    # two texts, each under the index's model and the second encoder's (the default vector2 view), keyed alike
    assert rows(la.embedding_cache, "vectors") == 4
    args = ["reset", "--set", f"corpus.path={a}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    assert main(args) == 2 and la.index_dir.exists()  # without --yes: only says what would go
    assert "would remove" in capsys.readouterr().out
    assert len(list((la.cache_dir / "matrices").glob("*.npy"))) == 2  # each ingest's view, as one matrix
    assert main([*args, "--yes"]) == 0
    assert "2 cached view matrices" in capsys.readouterr().out  # b's copy too: its next reader remakes it
    assert not la.index_dir.exists() and lb.index_dir.exists()
    assert not (la.cache_dir / "matrices").exists()  # no copy of its vectors is left
    assert rows(la.embedding_cache, "vectors") == 2  # the shared section's vectors stay: b still uses them
    b_sets = ["--set", f"corpus.path={b}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    assert main(["health", *b_sets]) == 0
    assert main([*args, "--yes"]) == 0 and "nothing to reset" in capsys.readouterr().out
    # the same process ingests it again from scratch: a fresh Chroma client, not the one of the removed store
    pipe = IngestPipeline(cfg_a)
    pipe.embedder = embedder
    again = pipe.run()
    assert (again.version, again.chunks, again.chunks_embedded) == ("v000001", 2, 1)
    assert check_index(cfg_a).ok


@pytest.mark.parametrize("kind", ["link", "file"])
@pytest.mark.parametrize("yes", [False, True])
def test_reset_refuses_an_index_path_that_is_a_link_or_a_file(tmp_path, make_config, capsys, kind, yes):
    """A probe linked the index folder to a folder of its own: the dry run said "would remove", and --yes took the
    ingest lock inside the link's target (a file written outside the index) before failing with a raw OSError."""
    cfg = make_config(tmp_path / "corpus")
    where = Layout(cfg).index_dir
    where.parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    if kind == "link":
        where.symlink_to(victim)
    else:
        where.write_text("not an index")
    args = ["reset", "--set", f"corpus.path={tmp_path / 'corpus'}", "--set", "retrieval.synonyms=null",
            "--set", "eval.testsets=[]", *(["--yes"] if yes else [])]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reset removes nothing there" in err[0] and str(where) in err[0], err
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"] and (victim / "keep.txt").read_text() == "mine"
    assert where.is_symlink() if kind == "link" else where.read_text() == "not an index"
