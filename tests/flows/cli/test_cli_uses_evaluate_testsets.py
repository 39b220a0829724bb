"""``ragrig eval``, ``ragrig run`` and ``ragrig gate`` evaluate through ``eval.evaluate.evaluate_testsets`` (a spy
stands in for it, so no index is needed): what each passes, and what each does with the reports."""

from __future__ import annotations

import json

import pytest
from ragrig.eval.gate import baseline_payload
from ragrig.eval.tracking.runs import RunOptions
from ragrig.flows.cli import main

TESTSET = "name: tiny\ncases:\n  - id: q1\n    query: what does lethal do\n    expect: [{doc: a.md}]\n"


@pytest.fixture
def spy(monkeypatch, make_report):
    import ragrig.eval.evaluate as ev

    calls = []

    def fake(cfg, testsets=None, **kw):
        calls.append({"testsets": [t.name for t in testsets], **kw})
        report = make_report(testset="tiny")
        if kw.get("log") is not None:
            report.mlflow_run_id = "run-1"
        return [report]

    monkeypatch.setattr(ev, "evaluate_testsets", fake)
    return calls


@pytest.fixture
def argv(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "ts.yaml").write_text(TESTSET)
    return ["--set", f"corpus.path={tmp_path / 'corpus'}", "--set", "retrieval.synonyms=null",
            "--set", "eval.testsets=[]", "--testset", str(tmp_path / "ts.yaml")]


def test_eval_passes_loaded_test_sets_and_its_flags_and_prints_the_run(spy, argv, tmp_path, capsys, make_report):
    out = tmp_path / "eval.json"
    rc = main(["eval", "--no-prefect", *argv, "-n", "2", "--max-hops", "1", "--run-name", "nightly",
               "--output-json", str(out)])
    assert rc == 0
    assert spy == [{"testsets": ["tiny"], "repeats": 2, "max_hops": 1, "log": RunOptions(run_name="nightly")}]
    expected = make_report(testset="tiny").to_dict()
    expected["mlflow_run_id"] = "run-1"
    assert json.loads(out.read_text()) == expected
    printed = capsys.readouterr().out
    assert "ragrig eval: tiny on k@v000001" in printed and "mlflow run: run-1" in printed


def test_gate_evaluates_without_logging_and_judges_the_reports(spy, argv, tmp_path, capsys, make_report):
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps(baseline_payload([make_report(testset="tiny").to_dict()])))
    out = tmp_path / "gate.json"
    assert main(["gate", "--no-ingest", "--baseline", str(base), *argv, "--output-json", str(out)]) == 0
    assert spy == [{"testsets": ["tiny"], "log": None}]
    result = json.loads(out.read_text())
    assert result["verdict"] == "PASS" and [c["name"] for c in result["results"][0]["checks"]] == [
        "ndcg@10", "recall@10", "mrr@10"]  # the default policy: eval.metrics.GATED
    assert "verdict: PASS" in capsys.readouterr().out


def test_a_bad_test_set_fails_the_gate_before_any_evaluation(spy, argv, tmp_path, capsys):
    (tmp_path / "ts.yaml").write_text("name: t\ncases: []\n")
    assert main(["gate", "--no-ingest", "--baseline", str(tmp_path / "b.json"), *argv]) == 2
    assert spy == [] and "cases" in capsys.readouterr().err
