"""Hybrid retrieval end to end on a tiny ingested corpus with the real MiniLM model: the one batch-first pipeline,
the query cache, filters, comparison pinning, section expansion, the candidate memo and lean results."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.errors import IndexNotFoundError, InputError, ModelMismatchError
from ragrig.configs.load import load_config
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.candidates import DedupKeys
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.retriever import Retriever

pytestmark = pytest.mark.slow

WEAPONS = """# Weapon Rules

Weapons can carry special rules that change how an attack resolves.

## Accurate x

You can retain x attack dice as normal successes without rolling them.

## Lethal x+

Your successes are critical successes on a roll of x+ instead of only on a 6.

## Piercing x

The defender collects x fewer defence dice before rolling.

## Balanced

You can re-roll one of your attack dice.
"""
ACTIONS = """# Actions

## Dash

An operative can move up to three inches in a straight line.

## Charge

The operative moves up to six inches and must finish within engagement range of an enemy.

## Fall Back

The operative leaves engagement range, costing two action points.
"""
IRON = """---
faction: Iron Wardens
tags: [Elite, Melee]
---
# Iron Wardens

Heavily armoured veterans who hold the line.

## Shield Wall

Friendly operatives within two inches of this operative gain cover.
"""
ASH = (
    "<html><body><h1>Ash Runners</h1><p>Fast scouts who strike from the shadows.</p>"
    "<h2>Smoke Step</h2><p>Once per turning point this operative can teleport through smoke.</p></body></html>\n"
)
FAQ = """# FAQ

## Healing

Operatives regain wounds only through specific abilities such as medics.

## Lethal and Piercing together

Lethal and Piercing can both be on one weapon. Lethal and Piercing stack: Lethal x+ and Piercing x both apply,
Lethal first, Piercing second.
"""
CORPUS = {"weapons.md": WEAPONS, "actions.md": ACTIONS, "teams/iron.md": IRON, "teams/ash.html": ASH, "faq.md": FAQ}


def overrides(corpus, home) -> list[str]:
    return [f"home={home}", f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"]


def ingest(cfg, embedder):
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder  # the session's loaded model (same model id)
    return pipe.run()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder):
    """(cfg, retriever) over one ingest of CORPUS shared by the read-only tests of this module."""
    root = tmp_path_factory.mktemp("retriever")
    corpus = root / "corpus"
    for rel, text in CORPUS.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text, encoding="utf-8")
    cfg = load_config(overrides=overrides(corpus, root / "home"))
    stats = ingest(cfg, embedder)
    assert stats.published and stats.docs_failed == 0
    return cfg, Retriever(cfg, embedder=embedder)


def chunk_ids(res) -> list[str]:
    return [h.chunk_id for h in res.hits]


@pytest.mark.real_encoding
def test_results_are_deterministic(indexed, embedder):
    cfg, r = indexed
    fresh = Retriever(cfg, embedder=embedder)
    for q in ("how far can an operative move", "smoke", "what does lethal do"):
        a = r.search(q, use_cache=False)
        b = r.search(q, use_cache=False)
        c = fresh.search(q)
        assert [(h.chunk_id, h.score) for h in a.hits] == [(h.chunk_id, h.score) for h in b.hits]
        assert [(h.chunk_id, h.score) for h in a.hits] == [(h.chunk_id, h.score) for h in c.hits]
        assert a.hits and not a.cached and a.version == "v000001"


def test_bm25_postings_are_memory_mapped_and_score_as_loaded_ones(indexed):
    """A reader pages BM25's postings in as queries read them (shared by every reader of the version) instead of
    holding a copy each: the same scores as the arrays read into memory."""
    from ragrig.retrieval.index.bm25 import Bm25Index

    cfg, r = indexed
    mapped = r.sources.bm25_index
    assert all(isinstance(part.scores[k], np.memmap) for _, part in mapped.parts for k in ("data", "indices"))
    loaded = Bm25Index.load(r.version.bm25_dir, cfg.index.bm25)
    assert not isinstance(loaded.parts[0][1].scores["data"], np.memmap)
    for q in ("lethal piercing", "shield wall cover", "smoke"):
        toks = mapped.tokenizer(q)
        assert mapped.scores(toks).tobytes() == loaded.scores(toks).tobytes() and mapped.search(toks, 5)


def test_hits_carry_per_source_ranks_that_explain_the_score(indexed):
    cfg, r = indexed
    q = "how far can an operative move"
    rrf = cfg.retrieval.model_copy(update={"fusion": cfg.retrieval.fusion.model_copy(update={"method": "rrf", "rrf_k": 60.0})})
    res = r.search(q, use_cache=False, retrieval=rrf)
    pq = r.processor.process(q)
    run = r.sources.bm25(pq.bm25_text, 100, None)
    bm25 = sorted(((r.chunks[row].chunk_id, s) for row, s in zip(run.rows.tolist(), run.scores.tolist())),
                  key=lambda kv: (-kv[1], kv[0]))
    bm25_rank = {cid: i + 1 for i, (cid, _) in enumerate(bm25)}
    assert res.candidates["vector"] == res.candidates["vector2"] == len(r.chunks)
    assert res.candidates["bm25"] == len(bm25)
    for h in res.hits:
        assert h.sources, h.chunk_id
        # the default's three sources; both vector sources (exact search) rank everything
        assert set(h.sources) <= {"bm25", "vector", "vector2"} and {"vector", "vector2"} <= set(h.sources)
        assert h.rank_in("bm25") == bm25_rank.get(h.chunk_id)
        # RRF k=60, weights 1/1/1, scaled by the best possible score 3/61
        expected = sum(1 / (60 + s.rank) for s in h.sources.values()) / (3 / 61)
        assert h.score == pytest.approx(expected)
    for source in ("bm25", "vector", "vector2"):
        ranks = [h.rank_in(source) for h in res.hits if h.rank_in(source) is not None]
        assert len(ranks) == len(set(ranks))
    assert [h.score for h in res.hits] == sorted((h.score for h in res.hits), reverse=True)
    assert {"embed", "bm25", "vector", "fuse", "shape", "total"} <= set(res.timings_ms)


def test_keyword_casing_does_not_change_the_result(indexed):
    _, r = indexed
    results = [r.search(q, use_cache=False) for q in ("accurate 1", "Accurate 1", "ACCURATE 1")]
    assert {res.normalized for res in results} == {"Accurate 1"}
    assert chunk_ids(results[0]) == chunk_ids(results[1]) == chunk_ids(results[2])
    assert "weapons.md#1" in chunk_ids(results[0])[:3]  # the "Accurate x" section


def test_comparison_keeps_both_rules_even_with_top_k_2(indexed):
    _, r = indexed
    # without the comparison rule the FAQ decoy that names both keywords ranks first
    plain = r.search("lethal piercing", top_k=2, use_cache=False)
    assert chunk_ids(plain)[0] == "faq.md#1"
    res = r.search("Lethal x+ vs Piercing x", top_k=2, use_cache=False)
    assert res.comparison == ["Lethal x+", "Piercing x"]
    assert sorted(chunk_ids(res)) == ["weapons.md#2", "weapons.md#3"]
    assert {h.reason for h in res.hits} == {"comparison: Lethal x+", "comparison: Piercing x"}


def test_filters_restrict_hits(indexed):
    _, r = indexed
    q = "what can an operative do"
    everything = r.search(q, use_cache=False, top_k=20)
    assert {h.doc_id for h in everything.hits} > {"teams/iron.md", "teams/ash.html"}
    teams = r.search(q, filters=Filters.parse(["path=teams/*"]), top_k=20)
    assert teams.hits and {h.doc_id for h in teams.hits} <= {"teams/iron.md", "teams/ash.html"}
    assert len(teams.hits) == 4  # every chunk under teams/ and nothing else
    html = r.search(q, filters=Filters.parse(["format=html"]), top_k=20)
    assert sorted(chunk_ids(html)) == ["teams/ash.html#0", "teams/ash.html#1"]
    fm = r.search(q, filters=Filters.parse(["fm.tags=melee"]), top_k=20)
    assert sorted(chunk_ids(fm)) == ["teams/iron.md#0", "teams/iron.md#1"]
    none = r.search(q, filters=Filters.parse(["format=pdf"]), top_k=20)
    assert none.hits == []


def test_min_relevance_is_an_absolute_floor_an_off_topic_query_falls_below(indexed):
    """The floor is on the calibrated scale (the share of unrelated pairs of this corpus a hit's similarity
    beats), not on the per-query fused score whose top is always 1.0: an off-topic query returns nothing."""
    cfg, r = indexed
    strict = cfg.retrieval.model_copy(update={"min_relevance": 0.95, "max_hops": 0})
    off = r.search("recipe for banana bread with walnuts", retrieval=strict, use_cache=False)
    assert off.hits == [] and off.candidates["vector"] > 0
    loose = r.search("recipe for banana bread with walnuts", use_cache=False)
    assert loose.hits and loose.hits[0].score == 1.0  # without the floor: the top is 1.0 whatever the query
    q = "how far can an operative move"
    on = r.search(q, retrieval=strict, use_cache=False)
    full = r.search(q, retrieval=cfg.retrieval.model_copy(update={"max_hops": 0}), use_cache=False)
    assert on.hits and on.hits[0].chunk_id == full.hits[0].chunk_id == "actions.md#0"  # Actions > Dash
    assert all(h.relevance is not None and h.relevance >= 0.95 for h in on.hits)
    # each relevance is the hit's query-chunk similarity on the calibrated scale
    qv = r.embedder.encode_queries([q])[0]
    for h in on.hits:
        cv = r.sources.vectors_of(np.array([r.row_of(h.chunk_id)]))[0]
        sim = float(qv @ cv / (np.linalg.norm(qv) * np.linalg.norm(cv)))
        assert h.relevance == pytest.approx(float(r.calibration.relevance(np.array([sim]))[0]), abs=0.01)
    assert len(r.calibration.background) > 100


def test_second_search_is_served_from_the_cache(indexed):
    _, r = indexed
    first = r.search("Shield Wall cover")
    second = r.search("shield wall   cover")  # same normalised text -> same key
    assert not first.cached and second.cached
    assert chunk_ids(first) == chunk_ids(second)
    other = r.search("Shield Wall cover", top_k=3)  # another top_k is another key
    assert not other.cached and len(other.hits) == 3


def test_bad_query_is_an_input_error(indexed):
    _, r = indexed
    with pytest.raises(InputError):
        r.search("bad\x00query")


def test_cache_is_invalidated_by_a_new_index_version(tmp_path, write_files, make_config, embedder):
    corpus = write_files(tmp_path / "corpus", CORPUS)
    cfg = make_config(corpus)
    ingest(cfg, embedder)
    q = "smoke grenade line of sight"
    r1 = Retriever(cfg, embedder=embedder)
    old = r1.search(q)
    assert old.version == "v000001" and "faq.md#2" not in chunk_ids(old)

    (corpus / "faq.md").write_text(FAQ + "\n## Smoke Grenades\n\nA smoke grenade blocks line of sight for a turn.\n")
    stats = ingest(cfg, embedder)
    assert (stats.published, stats.version) == (True, "v000002")
    r2 = Retriever(cfg, embedder=embedder)
    assert r2.version.version == "v000002"
    r2.cache = r1.cache  # even a shared cache must not serve the old version's answer
    new = r2.search(q)
    assert not new.cached and new.version == "v000002"
    assert chunk_ids(new)[0] == "faq.md#2" and chunk_ids(new) != chunk_ids(old)
    again = r2.search(q)
    assert again.cached and chunk_ids(again) == chunk_ids(new)
    # the old retriever still answers for its own version
    still = r1.search(q)
    assert still.cached and still.version == "v000001" and chunk_ids(still) == chunk_ids(old)


def test_model_mismatch_is_refused(tmp_path, write_files, make_config, embedder):
    corpus = write_files(tmp_path / "corpus", {"weapons.md": WEAPONS})
    cfg = make_config(corpus)
    ingest(cfg, embedder)
    changed = make_config(corpus, "embedding.document_prefix='x: '")
    assert changed.index_key() != cfg.index_key()
    with pytest.raises(IndexNotFoundError):  # the changed config has its own (empty) index
        Retriever(changed, embedder=embedder)
    first = IndexVersion(cfg, Layout(cfg), "v000001")
    with pytest.raises(ModelMismatchError) as exc:
        Retriever(changed, version=first, embedder=embedder)
    msg = str(exc.value)
    assert "sentence-transformers/all-MiniLM-L6-v2" in msg and "docprefix='x: '" in msg and "v000001" in msg


def test_section_expansion_brings_the_rest_of_its_own_section_not_its_siblings(indexed):
    cfg, r = indexed
    expand = cfg.retrieval.model_copy(update={"section_expansion_tokens": 80, "max_hops": 0})
    q = "weapons carry special rules that change how an attack resolves"
    res = r.search(q, top_k=1, use_cache=False, retrieval=expand)
    top, *added = res.hits
    assert top.chunk_id == "weapons.md#0" and top.header == "Weapon Rules" and added  # the document's own text
    assert all(h.reason == "section of weapons.md#0" and h.header.startswith("Weapon Rules > ") for h in added)
    assert top.tokens + sum(h.tokens for h in added) <= 80  # never over the token budget
    rows = [r.row_of(h.chunk_id) for h in added]
    assert rows == sorted(rows)  # in document order
    # a matched section with no pieces or subsections brings nothing: its siblings are other sections
    res = r.search("re-roll one of your attack dice", top_k=1, use_cache=False, retrieval=expand)
    assert [h.chunk_id for h in res.hits] == ["weapons.md#4"]  # Weapon Rules > Balanced, alone


@pytest.mark.parametrize("kw, msg", [({"top_k": 0}, "top_k must be an integer from 1 to 1000 (got 0)"),
                                     ({"top_k": -3}, "(got -3)"), ({"top_k": 1001}, "(got 1001)"),
                                     ({"max_hops": 6}, "max_hops must be an integer from 0 to 5 (got 6)"),
                                     ({"max_hops": -1}, "(got -1)")])
def test_out_of_range_depths_are_input_errors(indexed, kw, msg):
    _, r = indexed
    with pytest.raises(InputError) as exc:
        r.search("how far can an operative move", use_cache=False, **kw)
    assert msg in str(exc.value)


QUERIES = ["how far can an operative move", "what does lethal do", "Lethal x+ vs Piercing x", "smoke",
           "what does lethal do", "re-roll one of your attack dice"]


def _with(rc, update):
    for key, val in update.items():
        cur = getattr(rc, key)
        rc = rc.model_copy(update={key: cur.model_copy(update=val) if isinstance(val, dict) else val})
    return rc


class Spy:
    """Counts the calls to the retriever's candidate sources and to the query encoder."""

    def __init__(self, r, monkeypatch) -> None:
        self.calls: dict[str, list[int]] = {"bm25": [], "vectors": [], "header": [], "encode": []}
        for name in ("bm25", "vectors", "header"):
            real = getattr(r.sources, name)

            def wrapped(*args, _real=real, _name=name, **kw):
                self.calls[_name].append(len(args[0]) if _name == "vectors" else 1)
                return _real(*args, **kw)

            monkeypatch.setattr(r.sources, name, wrapped)
        real_encode = r.embedder.encode_queries
        monkeypatch.setattr(r.embedder, "encode_queries",
                            lambda texts: self.calls["encode"].append(len(texts)) or real_encode(texts))

    def reset(self) -> None:
        for v in self.calls.values():
            v.clear()


def test_a_batch_encodes_once_and_asks_chroma_once(indexed, monkeypatch):
    """Every query's vector candidates come from one encode call and one Chroma query (distinct texts only);
    BM25 runs once per distinct query text; each result carries its share of the batched stages."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    spy = Spy(r, monkeypatch)
    res = r.search_many(QUERIES, top_k=8, retrieval=rc)
    # 5 distinct texts; the comparison's two entities are found by header, so no sub-query is searched
    assert spy.calls["encode"] == [5] and spy.calls["vectors"] == [5] and len(spy.calls["bm25"]) == 5
    assert [x.query for x in res] == QUERIES and res[1].hits == res[4].hits
    for x in res:
        assert x.timings_ms["vector"] > 0 and x.timings_ms["total"] >= x.timings_ms["vector"] + x.timings_ms["bm25"]


@pytest.mark.parametrize("update", [
    {"fusion": {"method": "rrf"}},
    {"fusion": {"method": "weighted", "normalization": "minmax", "weights": {"bm25": 0.7, "vector": 1.3}}},
    {"fusion": {"method": "rrf", "rrf_k": 5, "weights": {"bm25": 1.0, "vector": 0.0, "header": 0.5}}},
    {"min_relevance": 0.3},
    {"dedup": False},
    {"adaptive": {"enabled": True}},
    {"section_expansion_tokens": 60},
])
def test_a_memo_serves_every_variant_from_candidates_fetched_once(indexed, monkeypatch, update):
    """Sweeps pass one CandidateMemo per index version: a second fusion/shaping variant over the same
    candidates fetches nothing and gives what a search without the memo gives."""
    cfg, r = indexed
    base = cfg.retrieval.model_copy(update={"max_hops": 0,
                                            "fusion": cfg.retrieval.fusion.model_copy(update={"weights": {
                                                "bm25": 1.0, "vector": 1.0, "header": 1.0}})})
    memo = CandidateMemo()
    r.search_many(QUERIES, top_k=8, retrieval=base, memo=memo)
    spy = Spy(r, monkeypatch)
    variant = _with(base, update)
    shared = r.search_many(QUERIES, top_k=8, retrieval=variant, memo=memo)
    assert spy.calls == {"bm25": [], "vectors": [], "header": [], "encode": []}
    fresh = r.search_many(QUERIES, top_k=8, retrieval=variant)
    assert [[h.to_dict() for h in x.hits] for x in shared] == [[h.to_dict() for h in x.hits] for x in fresh]
    # another candidate depth or a filter is another set of candidates: fetched anew
    spy.reset()
    r.search_many(QUERIES[:1], top_k=8, retrieval=variant.model_copy(update={"candidates": 7}), memo=memo)
    r.search_many(QUERIES[:1], top_k=8, retrieval=variant, memo=memo, filters=Filters(path="weapons.md"))
    assert spy.calls["bm25"] == [1, 1]


def test_lean_results_build_the_first_hits_and_rank_everything(indexed):
    """``hits=n`` (what evaluation asks for): full Hits for the first n only, the whole ranking in ``ranked``."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    full = r.search_many(QUERIES, top_k=12, retrieval=rc)
    lean = r.search_many(QUERIES, top_k=12, retrieval=rc, hits=2)
    for a, b in zip(full, lean):
        assert [h.to_dict() for h in b.hits] == [h.to_dict() for h in a.hits[:2]]
        assert [c.chunk_id for c in b.ranked] == [c.chunk_id for c in a.ranked] == [h.chunk_id for h in a.hits]
    assert any(len(a.hits) > 2 for a in full)



def test_lean_one_hop_results_rank_like_full_ones(indexed):
    """With one hop, ``hits=n`` builds Hits for the context window only; the ranking after the hop (hop chunks
    in the window, displaced and deeper hop-0 chunks after them, a promoted chunk once) and the hop hits' scores
    are those of the full build."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 1, "top_k": 3})
    queries = QUERIES + ["what does Lethal x+ do when I shoot", "can I Fall Back after a Dash?",
                         "does Balanced work with Accurate x and Piercing x when I Charge", "Smoke Step or Shield Wall?"]
    full = r.search_many(queries, top_k=12, retrieval=rc)
    lean = r.search_many(queries, top_k=12, retrieval=rc, hits=3)
    for a, b in zip(full, lean):
        assert [c.chunk_id for c in b.ranked] == [c.chunk_id for c in a.ranked] == [h.chunk_id for h in a.hits]
        assert [h.to_dict() for h in b.hits] == [h.to_dict() for h in a.hits[:3]]  # hop hits' scores included
    assert any(h.hop for a in lean for h in a.hits)  # a hop fetched something: the case this test is about


def test_a_duplicate_is_dropped_and_the_next_chunk_moves_up(indexed):
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    before = r.search(QUERIES[0], top_k=5, retrieval=rc, use_cache=False)
    first, second = (r.row_of(h.chunk_id) for h in before.hits[:2])
    saved = r.__dict__.pop("dedup")
    keys = list(saved.keys)
    keys[second] = keys[first]  # pretend hit 2 duplicates hit 1
    r.__dict__["dedup"] = DedupKeys.build(keys)
    try:
        after = r.search(QUERIES[0], top_k=5, retrieval=rc, use_cache=False)
    finally:
        r.__dict__["dedup"] = saved
    want = [h.chunk_id for h in before.hits[:1] + before.hits[2:]]
    assert [h.chunk_id for h in after.hits][:4] == want and len(after.hits) == 5
