"""The embedding cache: vectors by (model id, text sha256), torn rows are misses, deletion by sha."""

from __future__ import annotations

import sqlite3

import numpy as np
from ragrig.retrieval.cache.embeddings import EmbeddingCache


def v(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=np.float32)


def test_vectors_are_keyed_by_model_and_sha(tmp_path):
    cache = EmbeddingCache(tmp_path / "deep" / "e.sqlite")  # the folder is made
    cache.put_many("m1", [("s1", v(1, 2)), ("s2", v(3, 4))])
    cache.put_many("m2", [("s1", v(5, 6, 7))])
    got = cache.get_many("m1", ["s2", "s1", "s2", "nope"])
    assert sorted(got) == ["s1", "s2"] and got["s1"].tolist() == [1, 2] and got["s2"].tolist() == [3, 4]
    assert cache.get_many("m2", ["s1"])["s1"].tolist() == [5, 6, 7]
    assert (cache.count(), cache.count("m1"), cache.count("m2"), cache.count("m3")) == (3, 2, 1, 0)
    cache.put_many("m1", [("s1", v(9, 9))])  # a re-put replaces
    assert cache.get_many("m1", ["s1"])["s1"].tolist() == [9, 9] and cache.count() == 3
    cache.close()


def test_a_torn_row_is_a_miss(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("m", [("ok", v(1, 2, 3)), ("torn", v(1, 2, 3))])
    con = sqlite3.connect(tmp_path / "e.sqlite")
    con.execute("UPDATE vectors SET vec=? WHERE sha='torn'", [v(1, 2).tobytes()])  # 2 floats for dim 3
    con.commit()
    con.close()
    assert list(cache.get_many("m", ["ok", "torn"])) == ["ok"]
    cache.close()


def test_delete_removes_a_sha_under_every_model_and_nothing_else(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("m1", [(f"s{i}", v(i)) for i in range(2000)])  # more shas than one IN (...) batch takes
    cache.put_many("m2", [("s0", v(0)), ("s1999", v(1)), ("keep", v(2))])
    doomed = [f"s{i}" for i in range(0, 2000, 2)] + ["s0", "absent"]  # a repeat and an unknown sha: no harm
    assert cache.delete(doomed) == 1000 + 1  # s0 under m1 and m2, the 999 other even shas under m1
    assert cache.count("m1") == 1000 and cache.count("m2") == 2
    left = cache.get_many("m1", [f"s{i}" for i in range(2000)])
    assert sorted(left) == sorted(f"s{i}" for i in range(1, 2000, 2))
    assert sorted(cache.get_many("m2", ["s0", "s1999", "keep"])) == ["keep", "s1999"]
    assert cache.delete([]) == 0
    cache.close()
    reopened = EmbeddingCache(tmp_path / "e.sqlite")  # the deletion is committed
    assert reopened.count() == 1002
    reopened.close()


def test_a_commit_skips_the_fsync_and_a_writer_killed_after_it_loses_nothing(tmp_path):
    """WAL with ``synchronous=NORMAL`` (an ingest commits once a batch: the fsync cost ~15 ms a commit): what a
    process committed survives its SIGKILL (only a power cut may lose the last commits, and a cache makes them
    again)."""
    import subprocess
    import sys

    path = tmp_path / "e.sqlite"
    cache = EmbeddingCache(path)
    assert cache._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL (FULL is 2)
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    code = ("import os, signal, numpy as np\n"
            "from ragrig.retrieval.cache.embeddings import EmbeddingCache\n"
            f"c = EmbeddingCache(__import__('pathlib').Path({str(path)!r}))\n"
            "c.put_many('m', [('s', np.array([1, 2], dtype=np.float32))])\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == -9
    assert cache.get_many("m", ["s"])["s"].tolist() == [1, 2]
    cache.close()
    assert EmbeddingCache(path).get_many("m", ["s"])["s"].tolist() == [1, 2]
