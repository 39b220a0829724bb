"""BM25 of one piece written a range of columns at a time (``retrieval/index/bm25_spill.py``): bm25s' own files,
byte for byte, holding a range's postings at most; the spill gone afterwards, whatever happened."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index import bm25_spill
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.bm25_blocks import build_in_blocks
from ragrig.retrieval.index.bm25_shards import TokenIds
from ragrig.retrieval.index.bm25_spill import column_ranges, write_in_blocks


def files(path) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_column_ranges_hold_the_budget_and_cover_every_column():
    indptr = np.array([0, 3, 5, 5, 12, 13])  # columns of 3, 2, 0, 7 and 1 postings
    assert column_ranges(indptr, 5) == [(0, 3), (3, 4), (4, 5)]  # 5, 7 (one column over the budget: alone), 1
    assert column_ranges(indptr, 13) == [(0, 5)]
    assert column_ranges(indptr, 1) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert column_ranges(np.array([0]), 5) == [(0, 0)]


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+", "bm25l", "atire"])
@pytest.mark.parametrize("budget", [1, 40, 10**9])  # a range a column; ~40 postings; one range
def test_the_spilled_build_writes_the_block_builds_files(sample_texts, method, budget, tmp_path, monkeypatch):
    monkeypatch.setattr(bm25_spill, "MAX_RANGES", 10**9)  # so a budget of 1 is one column a range
    cfg = Bm25Config(method=method)
    tok = Bm25Index([], cfg).tokenizer
    tokens = [tok(t) or [""] for t in [*sample_texts, "", "   ", sample_texts[0]]]  # empty chunks, a repeated one
    build_in_blocks(TokenIds(tokens), cfg, 7).save(str(tmp_path / "want"), show_progress=False, allow_pickle=False)
    write_in_blocks(TokenIds(tokens), cfg, tmp_path / "got", block=5, budget=budget)
    want, got = files(tmp_path / "want"), files(tmp_path / "got")
    assert sorted(got) == sorted(want) and "data.csc.index.npy" in got
    assert [name for name in want if got[name] != want[name]] == []


def test_each_range_read_back_holds_at_most_the_budget(sample_texts, tmp_path, monkeypatch):
    read: list[int] = []
    real = np.fromfile

    def counted(path, dtype):  # type: ignore[no-untyped-def]
        out = real(path, dtype=dtype)
        read.append(len(out))
        return out

    monkeypatch.setattr(bm25_spill.np, "fromfile", counted)
    cfg = Bm25Config()
    tok = Bm25Index([], cfg).tokenizer
    corpus = TokenIds(tok(t) or [""] for t in sample_texts)
    n_postings = sum(len(set(corpus.ids[i])) for i in range(len(sample_texts)))
    write_in_blocks(corpus, cfg, tmp_path / "bm25", budget=500)
    assert sum(read) == n_postings and len(read) > 3  # every posting, in several ranges
    biggest_column = max(np.bincount([t for i in range(len(sample_texts)) for t in set(corpus.ids[i])]))
    assert max(read) <= max(500, biggest_column)
    assert sorted(p.name for p in (tmp_path / "bm25").iterdir()) == sorted(
        ["data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "params.index.json",
         "vocab.index.json"])  # no spill left


def test_an_error_midway_leaves_no_spill(sample_texts, tmp_path, monkeypatch):
    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bm25_spill.np, "argsort", broken)
    tok = Bm25Index([], Bm25Config()).tokenizer
    with pytest.raises(OSError, match="No space left"):
        write_in_blocks(TokenIds(tok(t) or [""] for t in sample_texts), Bm25Config(), tmp_path / "bm25", budget=500)
    assert list((tmp_path / "bm25").iterdir()) == []


@pytest.mark.parametrize("shards", [1, 3])
def test_an_ingests_write_is_builds_save(sample_texts, shards, tmp_path):
    """``Bm25Index.write`` (what ingest calls) writes what ``build(...).save`` writes: of one piece, in shards
    (saved one at a time), and for no chunks."""
    cfg = Bm25Config(shards=shards)
    Bm25Index.build(sample_texts, cfg).save(tmp_path / "want")
    Bm25Index.write(sample_texts, cfg, tmp_path / "got")
    assert files(tmp_path / "got") == files(tmp_path / "want")
    Bm25Index.write([], cfg, tmp_path / "empty")
    assert Bm25Index.load(tmp_path / "empty", cfg).parts == []


def test_token_ids_spilled_to_a_file_read_back_as_held(sample_texts, tmp_path, monkeypatch):
    monkeypatch.setattr(TokenIds, "SPILL_TOKENS", 50)  # the file written many times over
    cfg = Bm25Config()
    tok = Bm25Index([], cfg).tokenizer
    tokens = [tok(t) or [""] for t in sample_texts]
    held, spilled = TokenIds(tokens), TokenIds(tokens, spill=tmp_path / "ids")
    assert spilled.vocab == held.vocab and spilled.ends.tolist() == held.ends.tolist()
    assert len(spilled._flat) == 0 and (tmp_path / "ids").stat().st_size == 4 * int(held.ends[-1])
    assert list(spilled.ids) == list(held.ids) == [[held.vocab[t] for t in d] for d in tokens]
    assert spilled.ids[3:9] == held.ids[3:9] and spilled.ids[-1] == held.ids[-1]
    assert spilled.ids[::5] == held.ids[::5] and spilled.ids[9:3] == []
    build_in_blocks(held, cfg, 11).save(str(tmp_path / "want"), show_progress=False, allow_pickle=False)
    write_in_blocks(spilled, cfg, tmp_path / "got", block=13, budget=300)
    assert files(tmp_path / "got") == files(tmp_path / "want")


def test_the_npy_writer_counts_the_bytes_it_wrote_in_the_files_dtype(tmp_path):
    """Values handed over in another dtype are converted and counted as written (the completeness check compares
    the file's bytes), and a short file is refused."""
    import numpy as np
    import pytest
    from ragrig.retrieval.index.bm25_spill import _npy

    with _npy(tmp_path / "a.npy", np.float32, 5) as out:
        out.write(np.arange(3, dtype=np.float64))
        out.write(np.arange(3, 5, dtype=np.int64))
    assert np.load(tmp_path / "a.npy").tolist() == [0, 1, 2, 3, 4] and np.load(tmp_path / "a.npy").dtype == np.float32
    with pytest.raises(RuntimeError, match="wrote 8 bytes of 20"):
        with _npy(tmp_path / "b.npy", np.float32, 5) as out:
            out.write(np.arange(2, dtype=np.float64))
