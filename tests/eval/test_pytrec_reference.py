"""Our metrics against trec_eval (pytrec_eval) on a real BM25 run over SciFact, query by query.

With whole-document targets and one "chunk" per document, every section-level metric must
equal its trec_eval counterpart exactly (linear-gain nDCG, map_cut, recall, P, recip_rank).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ragrig.configs.models import Bm25Config
from ragrig.eval.metrics import Ranked, mean_metrics, query_metrics
from ragrig.eval.relevance import Target
from ragrig.eval.testset import import_beir
from ragrig.retrieval.index.bm25 import Bm25Index

pytestmark = [pytest.mark.shared, pytest.mark.slow]

SCIFACT = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "scifact"
DEPTH = 100
KS = [5, 10, 100]
# trec_eval measure -> our key
PAIRS = {
    "ndcg_cut_10": "ndcg@10",
    "ndcg_cut_100": "ndcg@100",
    "map_cut_10": "map@10",
    "map_cut_100": "map@100",
    "recall_10": "recall@10",
    "recall_100": "recall@100",
    "P_5": "precision@5",
    "P_10": "precision@10",
    "recip_rank": "mrr@100",
}


@pytest.fixture(scope="module")
def scifact_run():
    """(qrels, run, our per-query metrics) for BM25 top-100 over the 300 SciFact test queries."""
    if not (SCIFACT / "corpus.jsonl").is_file() or not (SCIFACT / "qrels" / "test.tsv").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT}")
    ids, texts = [], []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                ids.append(str(rec["_id"]))
                texts.append(f"{rec.get('title', '')} {rec.get('text', '')}")
    index = Bm25Index.build(texts, Bm25Config())
    ts = import_beir(SCIFACT, "test")
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    ours: dict[str, dict[str, float]] = {}
    for case in ts.cases:
        hits = index.search(index.tokenizer(case.query), DEPTH)
        ranked = [ids[row] for row, _ in hits]
        qrels[case.id] = {e.doc: e.grade for e in case.expect}
        # strictly decreasing scores by rank: trec_eval re-sorts by score (ties by doc id), so no ties allowed
        run[case.id] = {d: float(DEPTH - i) for i, d in enumerate(ranked)}
        targets = [Target(e.doc, e.doc, 0, 1, e.grade, "") for e in case.expect]
        ours[case.id] = query_metrics([Ranked(d, 0, 1) for d in ranked], targets, KS)
    return qrels, run, ours


def test_every_query_matches_trec_eval(scifact_run):
    import pytrec_eval

    qrels, run, ours = scifact_run
    assert len(qrels) == 300
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS))
    theirs = evaluator.evaluate(run)
    assert set(theirs) == set(ours) == set(qrels)  # BM25 returns something for every query
    compared = 0
    for qid, measures in theirs.items():
        for trec_name, our_key in PAIRS.items():
            assert ours[qid][our_key] == pytest.approx(measures[trec_name], abs=1e-6), (qid, trec_name)
            compared += 1
    assert compared == 300 * len(PAIRS)
    # a sanity floor, so a broken BM25 that makes everything 0 does not pass vacuously
    overall = mean_metrics(list(ours.values()))
    assert 0.55 < overall["ndcg@10"] < 0.8 and overall["recall@100"] > 0.8


@pytest.mark.skipif(
    not os.environ.get("RAGRIG_TEST_RANX"),
    reason="ranx's numba JIT costs ~30 s on a cold cache; set RAGRIG_TEST_RANX=1 to cross-check with ranx too",
)
def test_means_match_ranx(scifact_run):
    ranx = pytest.importorskip("ranx")
    qrels, run, ours = scifact_run
    keys = ["ndcg@10", "map@100", "recall@100", "precision@5", "mrr@100"]
    got = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), keys)
    overall = mean_metrics(list(ours.values()))
    for key in keys:
        assert overall[key] == pytest.approx(float(got[key]), abs=1e-6), key
