"""Hybrid retrieval end to end on a tiny ingested corpus with the real MiniLM model."""

from __future__ import annotations

import pytest
from ragrig.configs.errors import IndexNotFoundError, InputError, ModelMismatchError
from ragrig.configs.load import load_config
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.filters import Filters
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


def test_hits_carry_per_source_ranks_that_explain_the_score(indexed):
    cfg, r = indexed
    q = "how far can an operative move"
    rrf = cfg.retrieval.model_copy(update={"fusion": cfg.retrieval.fusion.model_copy(update={"method": "rrf", "rrf_k": 60.0})})
    res = r.search(q, use_cache=False, retrieval=rrf)
    pq = r.processor.process(q)
    bm25 = sorted(r.bm25_run(pq.bm25_text, 100).items(), key=lambda kv: (-kv[1], kv[0]))
    bm25_rank = {cid: i + 1 for i, (cid, _) in enumerate(bm25)}
    assert res.candidates["vector"] == len(r.chunks) and res.candidates["bm25"] == len(bm25)
    for h in res.hits:
        assert h.sources, h.chunk_id
        assert set(h.sources) <= {"bm25", "vector"} and "vector" in h.sources  # the vector source ranks everything
        assert h.rank_in("bm25") == bm25_rank.get(h.chunk_id)
        # RRF k=60, weights 1/1, scaled by the best possible score 2/61
        expected = sum(1 / (60 + s.rank) for s in h.sources.values()) / (2 / 61)
        assert h.score == pytest.approx(expected)
    for source in ("bm25", "vector"):
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


def test_min_relevance_drops_low_hits(indexed):
    cfg, r = indexed
    q = "how far can an operative move"
    full = r.search(q, use_cache=False)
    strict = cfg.retrieval.model_copy(update={"min_relevance": 0.9})
    cut = r.search(q, retrieval=strict, use_cache=False)
    assert 0 < len(cut.hits) < len(full.hits)
    assert all(h.score >= 0.9 for h in cut.hits)
    assert chunk_ids(cut) == [h.chunk_id for h in full.hits if h.score >= 0.9]


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


def test_section_expansion_brings_small_siblings_within_the_budget(indexed):
    cfg, r = indexed
    expand = cfg.retrieval.model_copy(update={"section_expansion_tokens": 60, "max_hops": 0})
    plain = r.search("re-roll one of your attack dice", top_k=1, use_cache=False,
                     retrieval=cfg.retrieval.model_copy(update={"max_hops": 0}))
    res = r.search("re-roll one of your attack dice", top_k=1, use_cache=False, retrieval=expand)
    assert [h.chunk_id for h in plain.hits] == ["weapons.md#4"]  # Weapon Rules > Balanced
    top, *added = res.hits
    assert top.chunk_id == "weapons.md#4" and added
    siblings = [c for c in r.chunks if c.doc_id == "weapons.md" and c.header_path[:-1] == ["Weapon Rules"]]
    assert all(h.reason == "section of weapons.md#4" for h in added)
    assert {h.chunk_id for h in added} <= {c.chunk_id for c in siblings}
    assert top.tokens + sum(h.tokens for h in added) <= 60  # never over the token budget
    # in document order, skipping what does not fit
    rows = [r.row[h.chunk_id] for h in added]
    assert rows == sorted(rows)


@pytest.mark.parametrize("method", ["rrf", "weighted"])
def test_reused_candidates_give_the_same_results(indexed, method):
    """Sweeps memoise candidates, ranks and query vectors: results must be identical to a plain search."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"fusion": cfg.retrieval.fusion.model_copy(update={"method": method})})
    queries = ["how far can an operative move", "what does lethal do", "Lethal x+ vs Piercing x", "smoke"]
    plain = r.search_many(queries, top_k=8, retrieval=rc)
    r.reuse_candidates(True)
    try:
        first = r.search_many(queries, top_k=8, retrieval=rc)
        again = r.search_many(queries, top_k=8, retrieval=rc)  # served from the memo
    finally:
        r.reuse_candidates(False)
    for a, b, c in zip(plain, first, again):
        assert [(h.chunk_id, round(h.score, 12)) for h in a.hits] == [(h.chunk_id, round(h.score, 12)) for h in b.hits]
        assert [(h.chunk_id, round(h.score, 12)) for h in b.hits] == [(h.chunk_id, round(h.score, 12)) for h in c.hits]
        assert [h.sources for h in a.hits] == [h.sources for h in c.hits]


@pytest.mark.parametrize("memo", [False, True])
@pytest.mark.parametrize("update", [
    {"fusion": {"method": "rrf"}},
    {"fusion": {"method": "weighted", "normalization": "minmax"}},
    {"fusion": {"method": "weighted", "normalization": "zscore", "weights": {"bm25": 0.7, "vector": 1.3}}},
    {"fusion": {"method": "rrf", "rrf_k": 5, "weights": {"bm25": 1.0, "vector": 0.0, "header": 0.5}}},
    {"fusion": {"method": "weighted", "weights": {"bm25": 0.0, "vector": 1.0, "header": 2.0}}},
    {"min_relevance": 0.3},
    {"dedup": False},
    {"adaptive": {"enabled": True}},  # not plain: full shaping, same as without lean
    {"section_expansion_tokens": 60},  # not plain either
])
def test_lean_search_ranks_exactly_like_full_search(indexed, memo, update):
    """Batch evaluation asks for lean results (full Hits for the first few, the ranking as chunks): the
    ranking, scores and those Hits must be the ones a full search returns, for every shaping setting."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    for key, val in update.items():
        cur = getattr(rc, key)
        rc = rc.model_copy(update={key: cur.model_copy(update=val) if isinstance(val, dict) else val})
    queries = ["how far can an operative move", "what does lethal do", "Lethal x+ vs Piercing x", "smoke",
               "re-roll one of your attack dice", "cover and obscured"]
    full = r.search_many(queries, top_k=12, retrieval=rc)
    r.reuse_candidates(memo)
    try:
        lean = r.search_many(queries, top_k=12, retrieval=rc, lean=3)
        lean_again = r.search_many(queries, top_k=12, retrieval=rc, lean=3)
    finally:
        r.reuse_candidates(False)
    plain_shaping = not (rc.adaptive.enabled or rc.section_expansion_tokens)
    for a, b, c in zip(full, lean, lean_again):
        if b.ranked is None:  # not plain (comparison, adaptive, expansion, duplicates): the full path ran
            assert [h.chunk_id for h in a.hits] == [h.chunk_id for h in b.hits]
            continue
        assert plain_shaping and not a.comparison
        assert [(c_.doc_id, c_.start, c_.end) for c_ in b.ranked] == [(h.doc_id, h.start, h.end) for h in a.hits]
        assert [h.to_dict() for h in b.hits] == [h.to_dict() for h in a.hits[:3]]
        assert [x.chunk_id for x in c.ranked] == [x.chunk_id for x in b.ranked]
    if plain_shaping:
        assert any(b.ranked is not None for b in lean)  # the lean path really ran
        assert any(b.ranked is None for b in lean)  # ... and the comparison query took the full path


@pytest.mark.parametrize("memo", [False, True])
def test_lean_search_deduplicates_like_the_full_path(indexed, memo):
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    q = "how far can an operative move"
    res = r.search(q, top_k=5, retrieval=rc, use_cache=False, lean=2)
    assert res.ranked is not None
    first, second = (r.row[h.chunk_id] for h in res.hits[:2])
    saved = r.dedup_keys[second]
    r.dedup_keys[second] = r.dedup_keys[first]  # pretend hit 2 duplicates hit 1
    r.__dict__.pop("dedup_prone", None)  # derived from the keys: recompute
    r.__dict__.pop("_prone_np", None)
    try:
        r.reuse_candidates(memo)
        lean = r.search(q, top_k=5, retrieval=rc, use_cache=False, lean=2)
        r.reuse_candidates(False)
        full = r.search(q, top_k=5, retrieval=rc, use_cache=False)
    finally:
        r.reuse_candidates(False)
        r.dedup_keys[second] = saved
        r.__dict__.pop("dedup_prone", None)
        r.__dict__.pop("_prone_np", None)
    assert r.chunks[second].chunk_id not in [c.chunk_id for c in lean.ranked]
    assert [c.chunk_id for c in lean.ranked] == [h.chunk_id for h in full.hits] and len(full.hits) == 5
    assert [h.to_dict() for h in lean.hits] == [h.to_dict() for h in full.hits[:2]]


@pytest.mark.parametrize("memo", [False, True])
@pytest.mark.parametrize("filters", [None, Filters(path="weapons.md")])
def test_search_many_fetches_vectors_in_one_batch_and_ranks_like_search(indexed, memo, filters, monkeypatch):
    """search_many asks Chroma once for every query's vector candidates; hits, scores and each source's
    rank must equal one search per query, with a filter and with the sweep memo (which it fills)."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    queries = ["how far can an operative move", "what does lethal do", "Lethal x+ vs Piercing x", "smoke",
               "what does lethal do"]
    # the same query vectors as the batch (one encode call; a batch pads, so vectors differ in the 7th digit)
    vecs = r.embedder.encode_queries([r.processor_for(rc).process(q).text for q in queries])
    single = [r.search(q, top_k=8, retrieval=rc, filters=filters, use_cache=False, qvec=v) for q, v in zip(queries, vecs)]
    calls: list[int] = []
    real = r.vector_runs
    monkeypatch.setattr(r, "vector_runs", lambda vecs, n, mask=None: calls.append(len(vecs)) or real(vecs, n, mask))
    r.reuse_candidates(memo)
    try:
        batch = r.search_many(queries, top_k=8, retrieval=rc, filters=filters)
        again = r.search_many(queries, top_k=8, retrieval=rc, filters=filters) if memo else batch
    finally:
        r.reuse_candidates(False)
    assert calls == ([4] if memo else [5])  # one Chroma call per batch; the memo asks once per distinct text
    for a, b, c in zip(single, batch, again):
        assert [(h.chunk_id, round(h.score, 12), h.sources) for h in a.hits] == \
               [(h.chunk_id, round(h.score, 12), h.sources) for h in b.hits] == \
               [(h.chunk_id, round(h.score, 12), h.sources) for h in c.hits]
        assert b.timings_ms["vector"] > 0 and b.timings_ms["total"] >= b.timings_ms["vector"]
    if filters is not None:
        assert all(h.doc_id == "weapons.md" for res in batch for h in res.hits)


@pytest.mark.parametrize("shape", ["one shared key per row", "a row shares two keys"])
def test_array_dedup_matches_the_full_selection(indexed, shape):
    """Sweeps de-duplicate memoised candidates either by group (each row shares at most one key with the
    others: first of each group) or by the walk: both must keep exactly what the full path keeps."""
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0, "dedup": True})
    n = len(r.chunks)
    assert n >= 8
    keys = [(("t", i), ("s", i % 3)) for i in range(n)]  # three sections, every row in one
    if shape == "a row shares two keys":
        keys[1] = (("t", 0), ("s", 1))  # shares its text with row 0 and its section with rows 4, 7, ...
    saved = {k: r.__dict__.pop(k, None) for k in ("dedup_keys", "dedup_prone", "_prone_np")}
    r.__dict__["dedup_keys"] = keys
    r.reuse_candidates(True)
    try:
        ids = [c.chunk_id for c in r.chunks]
        runs = {"bm25": {ids[i]: float(n - i) for i in range(n)}, "vector": {ids[i]: float(i) for i in range(0, n, 2)}}
        for top_k in (1, 2, 5, n):
            full, full_ranked = r._cut(r.fuse_runs(runs, rc), runs, rc, top_k, 3)
            cs, order, scores = r._fuse_arrays(runs, rc)
            assert (cs.group is None) == (shape == "a row shares two keys")
            arr, arr_ranked = r._cut_arrays(cs, order, scores, runs, rc, top_k, 3)
            assert [c.chunk_id for c in arr_ranked] == [c.chunk_id for c in full_ranked]
            assert [h.to_dict() for h in arr] == [h.to_dict() for h in full]
            assert len(full_ranked) == min(top_k, 3)  # three sections: everything else is a duplicate
    finally:
        r.reuse_candidates(False)
        r.__dict__.pop("dedup_keys", None)
        r.__dict__.pop("dedup_prone", None)
        r.__dict__.pop("_prone_np", None)
        r.__dict__.update({k: v for k, v in saved.items() if v is not None})


FUSION_VARIANTS = [
    {"fusion": {"method": "rrf"}},
    {"fusion": {"method": "rrf", "rrf_k": 5, "weights": {"bm25": 1.0, "vector": 0.0, "header": 0.5}}},
    {"fusion": {"method": "weighted", "normalization": "minmax"}},
    {"fusion": {"method": "weighted", "normalization": "zscore", "weights": {"bm25": 0.7, "vector": 1.3}}},
    {"fusion": {"method": "weighted", "weights": {"bm25": 0.0, "vector": 1.0, "header": 2.0}}},
    {"min_relevance": 0.3},
    {"dedup": False},
]


def _with(rc, update):
    for key, val in update.items():
        cur = getattr(rc, key)
        rc = rc.model_copy(update={key: cur.model_copy(update=val) if isinstance(val, dict) else val})
    return rc


def test_sweep_batch_fuses_every_plain_query_in_one_pass_and_ranks_like_one_at_a_time(indexed, monkeypatch):
    """With the sweep memo on, search_many fuses all plain single-hop queries in one array pass
    (retrieval/batch.py). Rankings, scores and Hits must equal the per-query path, for every fusion method."""
    import ragrig.retrieval.search.retriever as rmod

    cfg, r = indexed
    queries = ["how far can an operative move", "what does lethal do", "Lethal x+ vs Piercing x", "smoke",
               "re-roll one of your attack dice", "cover and obscured", "iron wardens shield wall"]
    calls: list[int] = []
    real = rmod.fuse_select
    monkeypatch.setattr(rmod, "fuse_select", lambda flat, *a: calls.append(flat.n_queries) or real(flat, *a))
    r.reuse_candidates(True)
    try:
        for update in FUSION_VARIANTS:
            rc = _with(cfg.retrieval.model_copy(update={"max_hops": 0}), update)
            calls.clear()
            batch = r.search_many(queries, top_k=9, retrieval=rc, lean=4)
            assert calls == [6], update  # one pass for the six plain queries; the comparison went one at a time
            with monkeypatch.context() as m:
                m.setattr(r, "_search_batch", lambda *a, **k: {})
                single = r.search_many(queries, top_k=9, retrieval=rc, lean=4)
            for a, b in zip(single, batch):
                assert (a.ranked is None) == (b.ranked is None) == bool(a.comparison)
                assert [c.chunk_id for c in a.ranked or []] == [c.chunk_id for c in b.ranked or []], update
                assert [h.to_dict() for h in a.hits] == [h.to_dict() for h in b.hits], update
                assert a.candidates == b.candidates and b.timings_ms["total"] >= b.timings_ms["fuse"]
    finally:
        r.reuse_candidates(False)


def test_sweep_batch_deduplicates_like_the_full_path(indexed):
    cfg, r = indexed
    rc = cfg.retrieval.model_copy(update={"max_hops": 0})
    queries = ["how far can an operative move", "smoke", "what does lethal do"]
    res = r.search(queries[0], top_k=5, retrieval=rc, use_cache=False)
    first, second = (r.row[h.chunk_id] for h in res.hits[:2])
    saved = r.dedup_keys[second]
    r.dedup_keys[second] = r.dedup_keys[first]  # pretend hit 2 duplicates hit 1
    r.__dict__.pop("dedup_prone", None)
    r.__dict__.pop("_prone_np", None)
    try:
        full = r.search_many(queries, top_k=5, retrieval=rc)
        r.reuse_candidates(True)
        batch = r.search_many(queries, top_k=5, retrieval=rc, lean=2)
    finally:
        r.reuse_candidates(False)
        r.dedup_keys[second] = saved
        r.__dict__.pop("dedup_prone", None)
        r.__dict__.pop("_prone_np", None)
    assert r.chunks[second].chunk_id not in [c.chunk_id for c in batch[0].ranked]
    for a, b in zip(full, batch):
        assert [c.chunk_id for c in b.ranked] == [h.chunk_id for h in a.hits]
        assert [h.to_dict() for h in b.hits] == [h.to_dict() for h in a.hits[:2]]
