"""The whole-matrix copies beside the embedding cache (``cache/matrices.py``): the same bits back, found only for
the same texts under the same encoder, ignored when damaged (and the embedding cache used instead), the most
recently used kept, and a reader that finds one opens no embedding cache."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from ragrig.retrieval.cache import matrices
from ragrig.retrieval.ingest import views
from ragrig.retrieval.ingest.views import embed_units

sys.path.insert(0, str(Path(__file__).parents[1] / "search"))
from test_views import FakeEmbedder  # noqa: E402

M = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, -1.0]], dtype=np.float32)


def test_a_saved_matrix_comes_back_to_the_bit_and_only_whole(tmp_path: Path) -> None:
    matrices.save(tmp_path, "k", M)
    got = matrices.load(tmp_path, "k", 3)
    assert got is not None and got.dtype == np.float32 and np.array_equal(got.view(np.uint32), M.view(np.uint32))
    assert matrices.load(tmp_path, "k", 4) is None  # other texts: other rows
    assert matrices.load(tmp_path, "other", 3) is None
    data = bytearray((tmp_path / "k.npy").read_bytes())
    data[-1] ^= 0x01  # one bit of the last value
    (tmp_path / "k.npy").write_bytes(bytes(data))
    assert matrices.load(tmp_path, "k", 3) is None  # its bytes no longer hash to its record
    matrices.save(tmp_path, "nan", np.array([[np.nan, 1.0]], dtype=np.float32))
    assert matrices.load(tmp_path, "nan", 1) is None  # a value that is not finite
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY")
    assert matrices.load(tmp_path, "junk", 1) is None


def test_the_key_is_the_encoder_its_prefix_and_every_text_in_order() -> None:
    base = matrices.key("bge", "", ["a", "b"])
    assert base == matrices.key("bge", "", ["a", "b"])
    assert len({base, matrices.key("bge", "", ["b", "a"]), matrices.key("minilm", "", ["a", "b"]),
                matrices.key("bge", "passage: ", ["a", "b"]), matrices.key("bge", "", ["a", "b", "c"])}) == 5


def test_the_most_recently_used_are_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(matrices, "KEEP", 2)
    for i, name in enumerate(["a", "b"]):
        matrices.save(tmp_path, name, M)
        os.utime(tmp_path / f"{name}.json", (1000 + i, 1000 + i))
    assert matrices.load(tmp_path, "a", 3) is not None  # a is used again: now the most recent
    matrices.save(tmp_path, "c", M)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.npy", "c.json", "c.npy"]


def test_a_folder_that_cannot_be_written_costs_nothing_but_the_copy(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    matrices.save(tmp_path / "file" / "matrices", "k", M)  # no error
    assert matrices.load(tmp_path / "file" / "matrices", "k", 3) is None


def test_a_reader_finds_the_matrix_and_opens_no_embedding_cache(tmp_path: Path, monkeypatch) -> None:
    texts = ["one", "two", "three"]
    emb = FakeEmbedder({t: list(map(float, row)) for t, row in zip(texts, M)})
    cache = tmp_path / "cache" / "embeddings.sqlite"
    first, new = embed_units(emb, texts, cache)
    assert new == 3 and len(list((cache.parent / "matrices").glob("*.npy"))) == 1

    def no_cache(path):
        raise AssertionError("the embedding cache was opened")

    with monkeypatch.context() as m:
        m.setattr(views, "EmbeddingCache", no_cache)
        again, new = embed_units(emb, texts, cache)
    assert new == 0 and np.array_equal(again.view(np.uint32), first.view(np.uint32))
    assert sorted(emb.encoded) == sorted(texts)  # each text embedded once (longest first), by the first call only

    [npy] = (cache.parent / "matrices").glob("*.npy")
    npy.write_bytes(npy.read_bytes()[:-4])  # damaged: the embedding cache answers, and the copy is written anew
    third, new = embed_units(emb, texts, cache)
    assert new == 0 and np.array_equal(third, first) and sorted(emb.encoded) == sorted(texts)
    assert matrices.load(npy.parent, npy.stem, 3) is not None
    record = json.loads(npy.with_suffix(".json").read_text())
    assert record["shape"] == [3, 2] and record["dtype"] == "float32"


def test_rows_saved_a_block_at_a_time_are_the_file_of_the_whole_matrix(tmp_path):
    m = np.random.default_rng(3).normal(size=(50, 6)).astype(np.float32)
    matrices.save(tmp_path / "whole", "k", m)
    matrices.save_rows(tmp_path / "blocks", "k", (m[i : i + 7] for i in range(0, 50, 7)), m.shape)
    for name in ("k.npy", "k.json"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "blocks" / name).read_bytes()
    assert np.array_equal(matrices.load(tmp_path / "blocks", "k", 50), m)
    np.save(tmp_path / "np.npy", m, allow_pickle=False)
    assert (tmp_path / "blocks" / "k.npy").read_bytes() == (tmp_path / "np.npy").read_bytes()  # np.save's bytes


def test_a_source_that_fails_midway_leaves_no_matrix_and_raises(tmp_path):
    def failing():
        yield np.ones((2, 3), dtype=np.float32)
        raise RuntimeError("the cache changed")

    with pytest.raises(RuntimeError, match="the cache changed"):
        matrices.save_rows(tmp_path, "k", failing(), (4, 3))
    assert list(tmp_path.iterdir()) == []
