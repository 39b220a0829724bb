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


def test_cli_sweep_through_prefect(tmp_path, write_files, monkeypatch, capsys):
    import ragrig.eval.sweep.run as sweep_run
    from prefect import get_client
    from prefect.artifacts import Artifact
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.testing.utilities import prefect_test_harness

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
    out = tmp_path / "sweep.json"
    with prefect_test_harness():
        assert main(["sweep", str(sweep), "-q", "--output-json", str(out)]) == 0
        artifact = Artifact.get("sweep-tiny-flow")
        assert artifact is not None
        with get_client(sync_client=True) as client:
            runs = FlowRunFilter(id=FlowRunFilterId(any_=[artifact.flow_run_id]))
            tasks = client.read_task_runs(flow_run_filter=runs)
    result = json.loads(out.read_text())
    assert [r["label"] for r in result["rows"]] == ["method=rrf", "method=weighted"]
    assert len(result["indexes"]) == 1 and result["best"]["label"] in ("method=rrf", "method=weighted")
    assert "| retrieval.fusion.method | test set | ndcg@10 | recall@10 | mrr@10 | recall@100 |" in artifact.data
    # one ingest for the shared index, then one evaluation task per config (mlflow off: nothing logged)
    assert sorted(t.name.rsplit("-", 1)[0] for t in tasks) == ["ingest", "retrieve-and-score", "retrieve-and-score"]
    printed = capsys.readouterr().out
    assert "sweep tiny-flow: 2 evaluations" in printed and "best by ndcg@10" in printed
