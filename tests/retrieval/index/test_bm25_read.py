"""A saved BM25 index read without bm25s (``index/bm25_read.py``) scores every document as bm25s' own reader
does, to the bit, for every method, one index or shards, in memory or memory-mapped; and opening and querying
one imports neither bm25s nor scipy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.bm25_read import SavedBm25
from ragrig.retrieval.index.bm25_shards import bm25s_module

TEXTS = [
    "Lethal x+: successes on x+ are critical hits.", "Balanced: re-roll one attack die.",
    "Grappling: a creature can grapple another within reach; the target escapes with Athletics.",
    "Cover grants +2 to AC against ranged attacks; three-quarters cover grants +5.",
    "A critical hit doubles the damage dice; lethal weapons crit on lower rolls.",
    "Movement: an operative moves up to six inches; dashing adds three more.",
    "", "attack attack attack roll roll", "Smoke grenades block line of sight until the end of the turn.",
] * 3
QUERIES = [["lethal", "crit"], ["attack", "roll", "attack"], ["grappl", "escap"], ["cover"], ["nothing", "here"],
           ["move", "dash", "smoke", "turn", "critic"]]


@pytest.mark.parametrize("method", ["robertson", "lucene", "atire", "bm25l", "bm25+"])
@pytest.mark.parametrize("shards", [1, 4])
def test_the_scores_are_bm25s_own_to_the_bit(tmp_path: Path, method: str, shards: int) -> None:
    cfg = Bm25Config(method=method, shards=shards)
    Bm25Index.build(TEXTS, cfg).save(tmp_path / "bm25")
    dirs = sorted(p for p in (tmp_path / "bm25").iterdir() if p.is_dir()) if shards > 1 else [tmp_path / "bm25"]
    assert len(dirs) == shards
    bm25s = bm25s_module()
    for d in dirs:
        theirs = bm25s.BM25.load(str(d), allow_pickle=False, show_progress=False)
        for mmap in (False, True):
            ours = SavedBm25(d, mmap=mmap)
            assert ours.vocab_dict == theirs.vocab_dict and ours.scores["num_docs"] == theirs.scores["num_docs"]
            for q in QUERIES:
                known = [t for t in q if t in theirs.vocab_dict]
                if not known:
                    continue
                a, b = ours.get_scores(known), theirs.get_scores(known)
                assert a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32)), (d, q)
    index = Bm25Index.load(tmp_path / "bm25", cfg)
    assert all(isinstance(r, SavedBm25) for _, r in index.parts) and index.size == len(TEXTS)


def test_a_missing_non_occurrence_array_is_an_error(tmp_path: Path) -> None:
    Bm25Index.build(TEXTS, Bm25Config(method="bm25l")).save(tmp_path)
    (tmp_path / "nonoccurrence_array.index.npy").unlink()
    with pytest.raises(FileNotFoundError, match="Non-occurrence array not found"):
        SavedBm25(tmp_path)


def test_a_token_id_past_the_postings_is_an_error_not_a_wrong_score(tmp_path: Path) -> None:
    Bm25Index.build(TEXTS, Bm25Config()).save(tmp_path)
    vocab = json.loads((tmp_path / "vocab.index.json").read_text())
    vocab["forged"] = len(vocab) + 5
    (tmp_path / "vocab.index.json").write_text(json.dumps(vocab))
    with pytest.raises(ValueError, match="outside the index"):
        SavedBm25(tmp_path).get_scores(["forged"])


def test_opening_and_querying_imports_neither_bm25s_nor_scipy(tmp_path: Path) -> None:
    Bm25Index.build(TEXTS, Bm25Config(shards=2)).save(tmp_path / "bm25")
    probe = f"""
import sys
from pathlib import Path
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25 import Bm25Index
index = Bm25Index.load(Path({str(tmp_path / 'bm25')!r}), Bm25Config(shards=2))
hits = index.search(index.tokenizer("lethal critical hits"), 3)
assert hits, hits
print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"bm25s", "scipy", "numba"}}))
"""
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "[]"


def test_the_stopwords_are_bm25s_own() -> None:
    import bm25s.stopwords
    from ragrig.retrieval.tokenize import _stopwords

    assert _stopwords("english") == frozenset(bm25s.stopwords.STOPWORDS_EN) and _stopwords("none") == frozenset()
