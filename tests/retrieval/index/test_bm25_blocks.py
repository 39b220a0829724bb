"""BM25 of one piece built a block of chunks at a time writes bm25s' own files (``retrieval/index/bm25_blocks.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.models import Bm25Config
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.bm25_blocks import build_in_blocks
from ragrig.retrieval.index.bm25_shards import TokenIds, bm25s_module


def theirs(tokens: list[list[str]], cfg: Bm25Config):  # type: ignore[no-untyped-def]
    """bm25s' own index (its sort, its COO arrays) over the same numbered corpus."""
    r = bm25s_module().BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    r.index(TokenIds(tokens), show_progress=False)
    return r


def saved(r, path) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    r.save(str(path), show_progress=False, allow_pickle=False)
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+", "bm25l", "atire"])
@pytest.mark.parametrize("block", [1, 3, 1000])
def test_the_block_build_writes_bm25s_own_files(sample_texts, method, block, tmp_path):
    cfg = Bm25Config(method=method)
    tok = Bm25Index([], cfg).tokenizer
    tokens = [tok(t) or [""] for t in [*sample_texts, "", "   ", sample_texts[0]]]  # empty chunks, a repeated one
    ours = saved(build_in_blocks(TokenIds(tokens), cfg, block), tmp_path / "ours")
    want = saved(theirs(tokens, cfg), tmp_path / "theirs")
    assert sorted(ours) == sorted(want) and "data.csc.index.npy" in ours
    for name in want:
        assert ours[name] == want[name], name


def test_random_corpora_score_as_bm25s_scores_them(tmp_path):
    """Terms repeated within chunks, chunks of one term, a vocabulary that grows block after block."""
    rng = np.random.default_rng(7)
    for trial in range(5):
        tokens = [[f"t{int(x)}" for x in rng.zipf(1.3, size=int(rng.integers(1, 40))) % 500] for _ in range(200)]
        cfg = Bm25Config(method=["lucene", "bm25+"][trial % 2], k1=float(rng.uniform(0.5, 2)), b=float(rng.random()))
        ours, want = build_in_blocks(TokenIds(tokens), cfg, int(rng.integers(1, 60))), theirs(tokens, cfg)
        for key in ("data", "indices", "indptr"):
            assert ours.scores[key].dtype == want.scores[key].dtype
            assert ours.scores[key].tobytes() == want.scores[key].tobytes(), (trial, key)
        assert ours.vocab_dict == want.vocab_dict and ours.scores["num_docs"] == want.scores["num_docs"] == 200
