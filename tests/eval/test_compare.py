"""Comparing two runs query by query on hand-built runs: deltas, wins/ties/losses, flips, Markdown, loading."""

from __future__ import annotations

import json
import re

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.compare import compare, first_relevant_rank, load_run, to_markdown


def row(qid, ndcg, hit, mrr100):
    return {"id": qid, "query": f"q {qid}", "metrics": {"ndcg@10": ndcg, "hit_rate@10": hit, "mrr@100": mrr100}}


BASE = {"testset": "t", "testset_sha256": "x", "per_query": [row("a", 1.0, 1, 1.0), row("b", 0.5, 1, 0.5),
                                                             row("c", 0.0, 0, 1 / 20), row("d", 0.3, 1, 1 / 3)]}
CAND = {"testset": "t", "testset_sha256": "x", "per_query": [row("a", 1.0, 1, 1.0), row("b", 0.0, 0, 1 / 12),
                                                             row("c", 0.6, 1, 1 / 2), row("d", 0.4, 1, 1 / 3)]}


def test_compare_deltas_wins_ties_losses_and_flips():
    c = compare(BASE, CAND, metrics=("ndcg@10",), k=10)
    m = c.metrics[0]
    assert (m.baseline, m.candidate) == pytest.approx((0.45, 0.5))
    assert m.delta == pytest.approx(0.05)
    assert (m.wins, m.ties, m.losses) == (2, 1, 1)
    # diffs 0, -0.5, 0.6, 0.1 -> exact test over the 3 non-zero ones: |sum| >= 0.2 for 6 of 8 sign vectors
    assert m.p_permutation == pytest.approx(6 / 8)
    assert [(f.id, f.direction, f.rank_before, f.rank_after) for f in c.flips] == [
        ("b", "lost", 2, 12), ("c", "gained", 20, 2)]
    md = to_markdown(c)
    assert "| ndcg@10 | 0.4500 | 0.5000 | +0.0500 |" in md and "| b | lost | 2 → 12 |" in md


def test_compare_needs_shared_ids_and_known_metrics():
    other = {"per_query": [row("zz", 0, 0, 0)]}
    with pytest.raises(InputError, match="share no query ids"):
        compare(BASE, other)
    with pytest.raises(InputError, match="metric 'map@3'"):
        compare(BASE, CAND, metrics=("map@3",))


def test_first_relevant_rank():
    assert first_relevant_rank(row("a", 0, 0, 0.25)) == 4
    assert first_relevant_rank(row("a", 0, 0, 0.0)) is None


def test_load_run_from_files(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps(BASE))
    assert load_run(str(p))[1]["testset"] == "t"
    multi = tmp_path / "multi.json"
    multi.write_text(json.dumps({"runs": [BASE, CAND]}))
    with pytest.raises(InputError, match="holds 2 runs"):
        load_run(str(multi))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not a JSON eval report"):
        load_run(str(bad))


@pytest.mark.parametrize("body, says", [
    ("null", "not a JSON eval report (a NoneType, not an object)"),
    ("[1, 2]", "not a JSON eval report (a list, not an object)"),
    ('{"per_query": {"a": 1}}', "per_query is not a list of rows"),
    ('{"per_query": [{"id": "a"}]}', "per_query[0] is not a row with an id and metrics"),
    ('{"per_query": [{"id": "a", "metrics": {"ndcg@10": "abc"}}]}', "query 'a': ndcg@10 is 'abc', not a finite number"),
    ('{"per_query": [{"id": "a", "metrics": {"ndcg@10": NaN}}]}', "query 'a': ndcg@10 is nan, not a finite number"),
    ('{"per_query": [{"id": "a", "metrics": {"ndcg@10": true}}]}', "query 'a': ndcg@10 is True, not a finite number"),
    ('{"per_query": [{"id": "a", "metrics": {}}, {"id": "a", "metrics": {}}]}', "query id 'a' appears twice"),
])
def test_a_malformed_report_is_one_line_naming_file_query_and_metric(tmp_path, body, says):
    """A report ``compare`` cannot read as numbers failed inside numpy (UFuncTypeError, TypeError) or printed nan
    deltas; a repeated id was silently collapsed."""
    p = tmp_path / "run.json"
    p.write_text(body)
    with pytest.raises(InputError, match="^" + re.escape(f"{p}: {says}")):
        load_run(str(p))


@pytest.mark.parametrize("args, says", [
    (["--permutations", "-1"], "--permutations -1: between 100 and 100000"),
    (["--permutations", "0"], "--permutations 0: between 100 and 100000"),
    (["--permutations", "2000000000"], "--permutations 2000000000: between"),
    (["--seed", "-1"], "--seed -1: a whole number, 0 or more"),
    (["-k", "0"], "-k 0: the top k of the flipped queries is 1 or more"),
    (["SAME"], "is given twice"),
])
def test_compare_options_are_checked_before_any_run_is_read(tmp_path, capsys, args, says):
    from ragrig.flows.cli import main

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(BASE))
    b.write_text(json.dumps(CAND))
    runs = [str(a), str(a)] if args == ["SAME"] else [str(a), str(b)]
    extra = [] if args == ["SAME"] else args
    assert main(["compare", *runs, *extra, "--set", f"home={tmp_path / 'home'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_a_k_the_runs_do_not_hold_names_the_option():
    with pytest.raises(InputError, match=r"^-k 5: flipped queries need hit_rate@5 in both runs"):
        compare(BASE, CAND, metrics=("ndcg@10",), k=5)


@pytest.mark.parametrize("store", ["mlflow/mlflow.db", "mlflow/mlflow.db?timeout=5"])
def test_a_run_name_in_a_store_that_does_not_exist_yet_is_one_line_and_makes_no_store(tmp_path, store):
    """`ragrig compare NAME ...` in a fresh home: the SQLite file is not there, so no run is; asking MLflow
    would create it (its migrations, seconds of a cold start) to find nothing."""
    uri = f"sqlite:///{tmp_path / store}"
    says = r"^'run-a' is neither a file nor an MLflow run id or run name .*holds no runs"
    with pytest.raises(InputError, match=says):
        load_run("run-a", uri)
    assert not (tmp_path / "mlflow" / "mlflow.db").exists()
