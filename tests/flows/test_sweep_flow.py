"""The sweep flow, as ``ragrig sweep FILE`` runs it: the CLI's resolved configs go to the flow (not reloaded),
each ingest and evaluation is a task, the summary is an artifact, and the terminal shows the best config."""

from __future__ import annotations

import json

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow

CORPUS = {"rules.md": "# Rules\n\n## Movement\n\nAn operative moves six inches.\n\n## Shooting\n\nRoll attack dice.\n"}
TESTSET = "name: tiny\ncases:\n  - id: move\n    query: how far does an operative move?\n" \
          "    expect: [{doc: rules.md, section: Movement}]\n"


def test_cli_sweep_through_prefect(prefect_api, tmp_path, write_files, monkeypatch, capsys):
    import ragrig.eval.sweep.run as sweep_run
    from prefect.artifacts import Artifact

    corpus = write_files(tmp_path / "corpus", CORPUS)
    (tmp_path / "ts.yaml").write_text(TESTSET)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"""name: tiny-flow
set: ["corpus.path={corpus}", "retrieval.synonyms=null", "eval.ragas=false", "mlflow.enabled=false",
      "eval.testsets=[{tmp_path / 'ts.yaml'}]"]
grid:
  retrieval.fusion.method: [rrf, weighted]
""")
    monkeypatch.setattr(sweep_run, "resolve", lambda *a: pytest.fail("the flow resolved the configs again"))
    stages = []  # the steps the flow ran as tasks (the task wrapper, recorded; the API records them asynchronously)
    import ragrig.tasks.executor as prefect_executor

    real = prefect_executor.run_stage
    monkeypatch.setattr(prefect_executor, "run_stage",
                        lambda name, fn, *args: stages.append(name) or real(name, fn, *args))
    out = tmp_path / "sweep.json"
    assert main(["sweep", str(sweep), "-q", "--output-json", str(out)]) == 0
    artifact = Artifact.get("sweep-tiny-flow")
    result = json.loads(out.read_text())
    assert [r["label"] for r in result["rows"]] == ["method=rrf", "method=weighted"]
    assert len(result["indexes"]) == 1 and result["best"]["label"] in ("method=rrf", "method=weighted")
    assert artifact is not None
    assert "| retrieval.fusion.method | test set | ndcg@10 | recall@10 | mrr@10 | recall@100 |" in artifact.data
    # one ingest for the shared index, then one evaluation task per config (mlflow off: nothing logged)
    assert stages == ["ingest", "retrieve-and-score", "retrieve-and-score"]
    printed = capsys.readouterr().out
    assert "sweep tiny-flow: 2 evaluations" in printed and "best by ndcg@10" in printed
