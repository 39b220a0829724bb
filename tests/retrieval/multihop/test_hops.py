"""Multi-hop retrieval end to end on a tiny rules corpus: a weapon profile names "Lethal 5+", hop 1
fetches the "Lethal x+" rule by its header and places it right after the profile."""

from __future__ import annotations

import pytest
from ragrig.configs.load import load_config
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.retriever import Retriever

pytestmark = pytest.mark.slow

CORPUS = {
    "weapons.md": """# Weapon Rules

## Lethal x+

Your successes are critical successes on a roll of x+ instead of only on a 6.

## Piercing x

The defender collects x fewer defence dice before rolling.

## Balanced

You can re-roll one of your attack dice.
""",
    "teams/gloom.md": """# Gloom Reavers

## Ripper Blade

The Ripper Blade is a serrated melee weapon carried by every Reaver champion.
Profile: 4 attacks, hits on 3+, damage 4/5. Special rules: Lethal 5+.

## Night Cloak

A Reaver wearing a night cloak cannot be seen beyond six inches.
""",
    "core/movement.md": """# Movement

## Dash

An operative can move up to three inches in a straight line.
""",
}


@pytest.fixture(scope="module")
def retriever(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("multihop")
    corpus = root / "corpus"
    for rel, text in CORPUS.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text, encoding="utf-8")
    cfg = load_config(overrides=[f"home={root / 'home'}", f"corpus.path={corpus}", "retrieval.synonyms=null",
                                 "eval.testsets=[]"])
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().published
    return Retriever(cfg, embedder=embedder)


QUERY = "what does the Reaver champion's Ripper Blade do to my hit rolls?"
PARAPHRASE = "what does the serrated blade of the Reaver champion do to my hit rolls?"


def ids(res):
    return [h.chunk_id for h in res.hits]


def test_hop_fetches_the_named_rule_into_the_context_window(retriever):
    plain = retriever.search(QUERY, top_k=2, use_cache=False, max_hops=0)
    assert ids(plain)[0] == "teams/gloom.md#0"  # the Ripper Blade profile
    assert "weapons.md#0" not in ids(plain)  # the Lethal rule is not in a top 2 without a hop

    res = retriever.search(QUERY, top_k=2, use_cache=False, max_hops=1)
    # the hop adds context: the rule takes the window's last place, the hop-0 hit it displaced follows it
    assert ids(res) == ["teams/gloom.md#0", "weapons.md#0", ids(plain)[1]]
    lethal = res.hits[1]
    assert (lethal.hop, lethal.header) == (1, "Weapon Rules > Lethal x+")
    assert lethal.reason == "hop 1: Lethal (header)"
    assert res.hops[0]["missing"] == [{"item": "Lethal", "origin": "teams/gloom.md#0"}]
    assert res.hops[0]["added"] == [{"chunk_id": "weapons.md#0", "item": "Lethal", "via": "header"}]
    assert "hops" in res.timings_ms


def test_second_hop_stops_when_nothing_new_is_named(retriever):
    res = retriever.search(QUERY, top_k=3, use_cache=False, max_hops=2)
    assert [h["hop"] for h in res.hops] == [1, 2]
    assert res.hops[1]["can_answer"] is True and res.hops[1]["added"] == []
    assert len(set(ids(res))) == len(ids(res))  # de-duplicated by chunk id


def test_zero_hops_and_single_hop_queries_are_unchanged(retriever):
    q = "how far can an operative dash?"
    a = retriever.search(q, top_k=3, use_cache=False, max_hops=0)
    b = retriever.search(q, top_k=3, use_cache=False, max_hops=2)
    assert ids(a) == ids(b) and b.hops[0]["can_answer"] is True


def test_anchored_judge_follows_only_chains_the_query_names(retriever):
    # the paraphrase names neither the Ripper Blade nor a rule: its best chunk's references are not followed
    # (the price of keeping general questions' own hits in the window), unless anchoring is turned off
    res = retriever.search(PARAPHRASE, top_k=2, use_cache=False, max_hops=1)
    assert ids(res)[0] == "teams/gloom.md#0" and "weapons.md#0" not in ids(res)
    assert res.hops[0]["can_answer"] is True and res.hops[0]["added"] == []
    free = retriever.cfg.retrieval.model_copy(
        update={"judge": retriever.cfg.retrieval.judge.model_copy(update={"anchored": False})})
    res = retriever.search(PARAPHRASE, top_k=2, use_cache=False, max_hops=1, retrieval=free)
    assert ids(res)[:2] == ["teams/gloom.md#0", "weapons.md#0"] and len(ids(res)) == 3


def test_hops_stay_within_the_query_filters(retriever):
    """Filtered to the team's file, the named rule (in weapons.md) is out of bounds: no hop brings it in."""
    only = Filters(path="teams/*")
    res = retriever.search(QUERY, top_k=2, use_cache=False, max_hops=1, filters=only)
    assert res.hits and all(h.doc_id.startswith("teams/") for h in res.hits)
    assert all(a["chunk_id"].startswith("teams/") for hop in res.hops for a in hop["added"])


def test_every_chunk_a_hop_names_is_returned(retriever):
    for k in (1, 2, 3):
        res = retriever.search(QUERY, top_k=k, use_cache=False, max_hops=1)
        added = [a["chunk_id"] for hop in res.hops for a in hop["added"]]
        assert added and set(added) <= set(ids(res))
        assert len([h for h in res.hits if h.hop == 0]) == min(k, len(retriever.chunks))  # none pushed out


def test_an_unreachable_llm_judge_degrades_to_the_hop_0_result(retriever, caplog):
    port = free_port()  # nothing listens there
    judge = retriever.cfg.retrieval.judge.model_copy(update={"kind": "llm", "base_url": f"http://127.0.0.1:{port}/v1",
                                                             "retries": 0, "timeout_s": 2})
    rc = retriever.cfg.retrieval.model_copy(update={"judge": judge})
    plain = retriever.search(QUERY, top_k=2, use_cache=False, max_hops=0)
    with caplog.at_level("WARNING", logger="ragrig"):
        res = retriever.search(QUERY, top_k=2, use_cache=False, max_hops=1, retrieval=rc)
    assert ids(res) == ids(plain)
    assert res.hops == [{"hop": 1, "error": res.hops[0]["error"], "added": [], "ms": res.hops[0]["ms"]}]
    assert "unreachable" in res.hops[0]["error"] and "judge failed" in caplog.text


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_batch_hops_as_each_query_does_alone(retriever):
    """Hops as batches (issue 37): the queries of a search_many take each hop together, one search_many per hop
    for all their missing items, and get what each query gets alone."""
    queries = [QUERY, PARAPHRASE, "how far can an operative dash?", "what does Lethal 5+ do on the Ripper Blade?"]
    hops = [1, 2, 2, 1]
    calls = []
    real = retriever.search_many

    def counting(qs, **kw):
        calls.append(len(qs))
        return real(qs, **kw)

    retriever.search_many = counting
    try:
        batch = counting(queries, top_k=2, max_hops=hops)
    finally:
        del retriever.search_many
    assert len(calls) <= 1 + max(hops)  # the batch, then one call a hop at most
    for q, h, res in zip(queries, hops, batch):
        alone = retriever.search(q, top_k=2, use_cache=False, max_hops=h)
        # (scores agree to the model's last bits: a query encoded in a batch differs there from one encoded alone)
        assert [(x.chunk_id, x.hop, x.reason) for x in res.hits] == [(x.chunk_id, x.hop, x.reason) for x in alone.hits]
        assert [x.score for x in res.hits] == pytest.approx([x.score for x in alone.hits], abs=1e-6)
        assert [{k: v for k, v in x.items() if k != "ms"} for x in res.hops] == \
            [{k: v for k, v in x.items() if k != "ms"} for x in alone.hops]
