"""BM25 in shards ranks exactly as one index: hand-computed scores on a tiny corpus, every query of the sample
test set at several shard counts and BM25 variants, ties across shards, filters, the files and the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from ragrig.configs.models import Bm25Config, RagrigConfig
from ragrig.eval.testset import load_testset
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.bm25_shards import SHARDS_FILE, TermStats, shard_bounds, shard_count
from ragrig.retrieval.index.format import read_chunks, read_documents, read_manifest
from ragrig.retrieval.index.health import check_version
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.build import build_version

ROOT = Path(__file__).resolve().parents[3]
PLAIN = Bm25Config(stemmer="none", stopwords="none")  # lucene, k1 1.2, b 0.75
TINY = ["apple banana", "apple apple cherry", "fig grape", "banana cherry date egg", "fig grape"]


def sharded(texts: list[str], cfg: Bm25Config, shards: int) -> Bm25Index:
    index = Bm25Index.build(texts, cfg.model_copy(update={"shards": shards}))
    assert len(index.parts) == shards
    return index


def test_hand_computed_scores_use_the_whole_corpus_statistics():
    # N = 5, lengths 2 3 2 4 2 -> avgdl 2.6; "apple": df 2, idf = ln(1 + (5 - 2 + 0.5) / (2 + 0.5)) = ln 2.4
    # row 1: tf 2, dl 3: 2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2.6)) = 0.599078 -> 0.875469 * 0.599078 = 0.524474
    # row 0: tf 1, dl 2: 1 / (1 + 1.2 * (0.25 + 0.75 * 2 / 2.6)) = 0.501931 -> 0.439424
    index = sharded(TINY, PLAIN, 2)  # rows 0-2 and 3-4
    assert index.bounds == [(0, 3), (3, 5)]
    hits = index.search(["apple"], 10)
    assert [r for r, _ in hits] == [1, 0]
    assert [s for _, s in hits] == pytest.approx([0.524474, 0.439424], abs=1e-6)
    # a shard scored with its own statistics would not agree: rows 0-2 alone, "apple" idf = ln(1 + 1.5 / 2.5)
    alone = Bm25Index.build(TINY[:3], PLAIN).search(["apple"], 10)
    assert alone[0][0] == 1 and alone[0][1] != pytest.approx(hits[0][1], abs=1e-3)


def test_ties_across_shards_go_by_row_and_k_cuts_after_the_merge():
    one = Bm25Index.build(TINY, PLAIN)
    for shards in (2, 3, 5):
        s = sharded(TINY, PLAIN, shards)
        assert s.search(["fig"], 10) == one.search(["fig"], 10)
        assert [r for r, _ in s.search(["fig"], 10)] == [2, 4]  # equal scores, in row order
        assert [r for r, _ in s.search(["fig"], 1)] == [2]
        assert s.search(["banana", "cherry"], 2) == one.search(["banana", "cherry"], 2)
        assert s.search(["nothing"], 5) == [] and s.size == 5


def test_a_filter_mask_is_cut_per_shard():
    mask = np.array([1, 0, 1, 1, 0], dtype=np.float32)
    one, s = Bm25Index.build(TINY, PLAIN), sharded(TINY, PLAIN, 2)
    assert s.search(["apple", "fig"], 10, mask) == one.search(["apple", "fig"], 10, mask)
    # row 1 (apple) and row 4 (fig) masked out; rows 0 and 2 score alike (tf 1, length 2, df 2): by row
    assert [r for r, _ in s.search(["apple", "fig"], 10, mask)] == [0, 2]
    assert np.array_equal(s.scores(["cherry"], mask), one.scores(["cherry"], mask))


def test_shard_count_and_bounds():
    assert shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_count(Bm25Config(), 999_999) == 1 and shard_count(Bm25Config(), 0) == 1
    assert shard_count(Bm25Config(shard_max_chunks=100), 250) == 3
    assert shard_count(Bm25Config(shards=8), 5) == 5  # never an empty shard
    a = TermStats.of([["x", "y", "x"], ["y"]])
    assert (a.num_docs, a.total_len, a.df) == (2, 4, {"x": 1, "y": 2})
    assert a.merge(TermStats.of([["z"]])).df == {"x": 1, "y": 2, "z": 1}


def test_the_layout_settings_do_not_change_the_index_key():
    cfg = RagrigConfig()
    other = cfg.model_copy(update={"index": cfg.index.model_copy(update={
        "bm25": Bm25Config(shards=4, shard_max_chunks=10)})})
    assert other.index_key() == cfg.index_key()


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+"])
def test_every_sample_query_ranks_the_same_in_shards(sample_texts, method):
    cfg = Bm25Config(method=method)
    one = Bm25Index.build(sample_texts, cfg)
    queries = [c.query for c in load_testset(ROOT / "datasets" / "testsets" / "sample.yaml").cases]
    assert len(sample_texts) > 100 and len(queries) > 50
    for shards in (2, 7, 32):
        s = sharded(sample_texts, cfg, shards)
        for q in queries:
            toks = one.tokenizer(q)
            want, got = one.search(toks, 100), s.search(toks, 100)
            assert [r for r, _ in got] == [r for r, _ in want], (shards, q)
            assert np.allclose([x for _, x in got], [x for _, x in want], rtol=0, atol=1e-6)
            assert got == want  # in fact bit for bit: the same float32 numbers added in the same order


def test_a_sharded_version_is_written_recorded_and_read(tmp_path):
    legacy = ROOT / "tests" / "fixtures" / "index-v1" / "v000001"
    raw = yaml.safe_load((legacy / "config.yaml").read_text())
    raw.pop("flow")  # runner settings, renamed since the fixture was written; no part of what an index holds
    raw["index"]["bm25"]["shards"] = 2
    cfg = RagrigConfig.model_validate(raw)
    docs, chunks = list(read_documents(legacy)), read_chunks(legacy)
    vectors = np.random.default_rng(3).normal(size=(len(chunks), 384)).astype(np.float32)
    layout = Layout(cfg)
    version = build_version(cfg, layout, docs, chunks, vectors, model_id="m", dim=384, corpus_kind="directory")
    vdir = layout.version_dir(version)
    meta = json.loads((vdir / "bm25" / SHARDS_FILE).read_text())
    assert [(e["dir"], e["start"], e["end"]) for e in meta["shards"]] == [("shard-0000", 0, 3), ("shard-0001", 3, 5)]
    manifest = read_manifest(vdir)
    assert manifest["bm25"] == {"shards": 2}
    assert {f.split("/")[1] for f in manifest["files"] if f.startswith("bm25/")} == {SHARDS_FILE, "shard-0000",
                                                                                     "shard-0001"}
    assert not check_version(cfg, layout, version, current=False).problems
    loaded = Bm25Index.load(vdir / "bm25", cfg.index.bm25)
    one = Bm25Index.build([c.search_text for c in chunks], cfg.index.bm25)
    for term in ("shield", "charg", "move", "cover wall"):
        toks = one.tokenizer(term)
        assert loaded.search(toks, 5) == one.search(toks, 5) and loaded.search(toks, 5)
    # shards that do not cover the rows once are a damaged index, not a silent gap
    meta["shards"][1]["start"] = 4
    (vdir / "bm25" / SHARDS_FILE).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="do not cover rows"):
        Bm25Index.load(vdir / "bm25", cfg.index.bm25)
    assert loaded.stats is not None and loaded.stats.avg_len == pytest.approx(sum(len(one.tokenizer(c.search_text))
                                                                                   for c in chunks) / 5)


BM25_PROBE = """
import hashlib, sys
if sys.argv[1] == "numba-first":
    import numba  # bm25s then finds numba, as it did before bm25s_module hid it
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25 import Bm25Index
texts = [f"doc {i} lethal {i % 7} balanced rules weapon {'x' * (i % 5)} critical {i * 13 % 11}" for i in range(300)]
idx = Bm25Index.build(texts, Bm25Config())
scores = [idx.scores(idx.tokenizer(q)).tobytes() for q in ("lethal rules", "critical weapon 3", "balanced x")]
print(hashlib.sha256(b"".join(scores)).hexdigest(), "numba" in sys.modules, idx.parts[0][1].backend)
"""


@pytest.mark.slow
def test_bm25_scores_are_the_same_without_numba_in_the_process():
    """bm25s is imported with numba hidden (its import is most of opening an index): the scores are the same bytes
    as with numba imported first (the query path's own check, that numba is not loaded: tests/flows/cli/
    test_query_cold.py)."""
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", BM25_PROBE, mode], capture_output=True, text=True, timeout=300)
            for mode in ("numba-first", "plain")]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-500:] for r in runs]
    (h1, _, backend1), (h2, _, backend2) = (r.stdout.split() for r in runs)
    assert h1 == h2 and backend1 == backend2 == "numpy"


SAVE_PROBE = """
import hashlib, sys
from pathlib import Path
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25 import Bm25Index
texts = [f"doc {i} lethal {i % 7} balanced rules weapon {'x' * (i % 5)} critical {i * 13 % 11}" for i in range(300)]
out = Path(sys.argv[1])
Bm25Index.build([*texts, ""], Bm25Config()).save(out)
print(" ".join(f"{p.name}:{hashlib.sha256(p.read_bytes()).hexdigest()[:16]}" for p in sorted(out.iterdir())))
"""


@pytest.mark.slow
def test_two_builds_of_one_corpus_write_the_same_files_whatever_the_hash_seed(tmp_path):
    """The vocabulary is numbered by first appearance (bm25s' own numbering followed Python's string hashing, so two
    builds wrote other bytes)."""
    import os
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", SAVE_PROBE, str(tmp_path / seed)], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "PYTHONHASHSEED": seed}) for seed in ("1", "2")]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-500:] for r in runs]
    assert runs[0].stdout == runs[1].stdout and "vocab.index.json" in runs[0].stdout


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_the_first_appearance_vocabulary_scores_as_bm25s_own(sample_texts, method):
    """The same scores, to the bit, as bm25s indexing the same tokens itself, for every query of the sample set."""
    from ragrig.retrieval.index.bm25_shards import bm25s_module

    cfg = Bm25Config(method=method)
    ours = Bm25Index.build(sample_texts, cfg)
    theirs = bm25s_module().BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    theirs.index([ours.tokenizer(t) or [""] for t in sample_texts], show_progress=False)
    assert sorted(theirs.vocab_dict) == sorted(ours.parts[0][1].vocab_dict)
    for q in [c.query for c in load_testset(ROOT / "datasets" / "testsets" / "sample.yaml").cases]:
        toks = [t for t in ours.tokenizer(q) if t in theirs.vocab_dict]
        if toks:
            assert ours.parts[0][1].get_scores(toks).tobytes() == theirs.get_scores(toks).tobytes(), q


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+", "bm25l", "atire"])
def test_the_one_piece_build_from_compact_token_ids_writes_the_files_of_token_lists(sample_texts, method, tmp_path):
    """``TokenIds`` (an int32 array, not a list of lists a chunk) gives bm25s the corpus ``numbered`` gave it: the
    saved files are the same bytes, empty chunks included."""
    from ragrig.retrieval.index.bm25_shards import bm25s_module, numbered

    cfg = Bm25Config(method=method)
    texts = [*sample_texts, "", "   "]
    Bm25Index.build(texts, cfg).save(tmp_path / "ours")
    tok = Bm25Index([], cfg).tokenizer
    lists = bm25s_module().BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    lists.index(numbered([tok(t) or [""] for t in texts]), show_progress=False)
    lists.save(str(tmp_path / "lists"), show_progress=False, allow_pickle=False)
    names = sorted(p.name for p in (tmp_path / "lists").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "ours").iterdir()) and "data.csc.index.npy" in names
    for name in names:
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "lists" / name).read_bytes(), name


def test_token_ids_read_as_the_lists_numbered_makes():
    from ragrig.retrieval.index.bm25_shards import TokenIds, numbered

    docs = [["b", "a", "b"], [""], ["c", "a"], [], ["d"]]
    ids = TokenIds(iter(docs))  # one pass over the chunks
    want, vocab = numbered(docs)
    assert ids.vocab == vocab == {"b": 0, "a": 1, "": 2, "c": 3, "d": 4}
    assert list(ids.ids) == list(ids.ids) == want == [[0, 1, 0], [2], [3, 1], [], [4]]
    assert len(ids.ids) == 5 and ids.ids[-1] == [4] and ids.ids[1:3] == [[2], [3, 1]]
    with pytest.raises(IndexError):
        ids.ids[5]


def test_the_counting_csc_gives_bm25s_own_arrays():
    """Documents' postings in row order, each column at most once a row (what bm25s hands its CSC hook): the
    arrays of bm25s' sort, without it."""
    from ragrig.retrieval.index.bm25_shards import bm25s_module, counting_csc

    bm25s_module()
    from bm25s.scoring import _np_csc_python

    rng = np.random.default_rng(4)
    n_docs, n_cols = 300, 50
    per_doc = [rng.choice(n_cols, size=int(rng.integers(1, 12)), replace=False) for _ in range(n_docs)]
    cols = np.concatenate(per_doc).astype(np.int32)
    rows = np.repeat(np.arange(n_docs, dtype=np.int32), [len(c) for c in per_doc])
    data = rng.random(len(cols)).astype(np.float32)
    ours, theirs = counting_csc(data, rows, cols, (n_docs, n_cols)), _np_csc_python(data, rows, cols, (n_docs, n_cols))
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    one = counting_csc(np.array([0.5], dtype=np.float32), np.array([0], dtype=np.int32), np.array([2], dtype=np.int32),
                       (1, 3))
    assert [x.tolist() for x in one] == [[0.5], [0], [0, 0, 0, 1]]
