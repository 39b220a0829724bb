"""log_report on a hand-built report: run status, nesting, provenance tags, metric names and artifacts (no index
needed)."""

from __future__ import annotations

import json

import pytest
from ragrig.eval.report import EvalReport
from ragrig.eval.tracking.runs import RunOptions, metric_name, run_metrics


def report() -> EvalReport:
    row = {"id": "q1", "query": "what does lethal do", "tags": ["rules"], "expected": ["a.md"], "missed@10": [],
           "metrics": {"ndcg@10": 1.0, "recall@10": 1.0, "mrr@10": 1.0, "precision@5": 0.2}, "latency_ms": 1.5,
           "normalized": "what does lethal do", "expansions": [],
           "top": [{"rank": 1, "chunk_id": "a.md#0", "header": "Lethal", "score": 1.0, "relevant": True, "hop": 0}]}
    return EvalReport(testset="tiny", testset_path=None, testset_sha256="abc", index_key="k", index_version="v000001",
                      model_id="m", k_values=[5, 10], overall={"ndcg@10": 1.0, "recall@10": 1.0},
                      per_tag={"rules": {"ndcg@10": 1.0, "n": 1.0}}, per_query=[row],
                      latency_ms={"p50": 1.5}, label="tiny")


def test_metric_names_and_the_per_tag_selection():
    assert metric_name("ndcg@10") == "ndcg_at_10" and metric_name("ragas.id_context_precision@10") == \
        "ragas.id_context_precision_at_10"
    r = report()
    r.per_tag = {"rules": {"ndcg@10": 0.5, "recall@10": 0.25, "precision@5": 0.2, "hit_rate@5": 1.0, "n": 3.0}}
    r.variance = {"ndcg@10.stdev": 0.01}
    r.ragas = {"id_context_recall@10": 0.75}
    # per tag: ndcg@10, recall@10, mrr@10 (absent here) and hit_rate@5 only; never precision@5 or n
    assert run_metrics(r) == {"ndcg_at_10": 1.0, "recall_at_10": 1.0, "tag.rules.ndcg_at_10": 0.5,
                              "tag.rules.recall_at_10": 0.25, "tag.rules.hit_rate_at_5": 1.0, "latency_ms.p50": 1.5,
                              "ndcg_at_10.stdev": 0.01, "ragas.id_context_recall_at_10": 0.75}


@pytest.fixture
def cfg(make_config):
    return make_config(None, "mlflow.experiment=unit")


def test_a_run_is_finished_with_metrics_params_provenance_and_the_whole_report(cfg, tmp_path):
    from mlflow.tracking import MlflowClient
    from ragrig.eval.tracking.runs import log_report

    run_id = log_report(cfg, report(), RunOptions(run_name="one", plots=False))
    run = MlflowClient().get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "one"
    assert run.data.metrics["ndcg_at_10"] == 1.0 and run.data.metrics["tag.rules.ndcg_at_10"] == 1.0
    assert run.data.params["index.version"] == "v000001" and run.data.params["testset.sha256"] == "abc"
    assert run.data.tags["ragrig.testset"] == "tiny" and run.data.tags["mlflow.source.type"] == "LOCAL"
    assert "mlflow.user" in run.data.tags and "mlflow.parentRunId" not in run.data.tags
    names = {a.path for a in MlflowClient().list_artifacts(run_id)}
    assert names == {"per_query.csv", "config.yaml", "report.json", "failed_cases.md"}
    local = MlflowClient().download_artifacts(run_id, "report.json", str(tmp_path))
    assert json.loads(open(local, encoding="utf-8").read())["per_query"][0]["top"][0]["chunk_id"] == "a.md#0"


def test_nested_runs_hang_under_the_given_parent_or_the_active_run(cfg):
    import mlflow
    from mlflow.tracking import MlflowClient
    from ragrig.eval.tracking.runs import log_report
    from ragrig.eval.tracking.store import ensure_experiment

    exp = ensure_experiment(cfg)
    with mlflow.start_run(experiment_id=exp, run_name="parent") as parent:
        active = log_report(cfg, report(), RunOptions(nested=True, plots=False))
        given = log_report(cfg, report(), RunOptions(plots=False, experiment_id=exp, parent_run_id=parent.info.run_id,
                                                      param_keys=["retrieval.fusion.rrf_k"]))
        assert mlflow.active_run().info.run_id == parent.info.run_id  # logging never replaced the active run
    client = MlflowClient()
    for run_id in (active, given):
        assert client.get_run(run_id).data.tags["mlflow.parentRunId"] == parent.info.run_id
    # a child logs only its own params plus the provenance, which says what answered its vector queries
    params = client.get_run(given).data.params
    assert set(params) == {"retrieval.fusion.rrf_k", "index.version", "index.key", "embedding.model_id",
                           "index.vector_search.used", "testset.name", "testset.sha256", "git.commit"}
    assert params["index.vector_search.used"] == report().vector_search == "exact"


def test_a_run_whose_logging_fails_is_marked_failed_and_the_error_surfaces(cfg, monkeypatch):
    import ragrig.eval.tracking.runs as runs
    from mlflow.tracking import MlflowClient

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(runs, "write_artifacts", broken)
    with pytest.raises(OSError, match="disk full"):
        runs.log_report(cfg, report(), RunOptions(run_name="broken", plots=False))
    exp = MlflowClient().get_experiment_by_name("unit")
    runs = MlflowClient().search_runs([exp.experiment_id])
    assert [(r.info.run_name, r.info.status) for r in runs] == [("broken", "FAILED")]


def test_the_test_set_is_a_dataset_input_and_the_run_is_named_and_tagged_by_what_it_evaluated(cfg, tmp_path):
    """MLflow's conventions: the test set as a dataset input (``mlflow.log_input``'s context tag ``eval``, its
    digest the file's sha256 prefix, one row per case), tags for the index key and version, a meaningful
    default name."""
    from mlflow.tracking import MlflowClient
    from ragrig.eval.tracking.runs import log_report

    ts = tmp_path / "tiny.yaml"
    ts.write_text("name: tiny\n")
    r = report()
    r.testset_path, r.testset_sha256, r.label = str(ts), "0123456789abcdef" + "f" * 48, ""
    r.machine = "x86_64 avx2+fma"
    run_id = log_report(cfg, r, RunOptions(plots=False))  # first: it points MLflow at the config's store
    run = MlflowClient().get_run(run_id)
    assert run.info.run_name == "tiny on k@v000001"
    assert run.data.tags["ragrig.index.key"] == "k" and run.data.tags["ragrig.index.version"] == "v000001"
    assert run.data.tags["ragrig.machine"] == "x86_64 avx2+fma"  # the CPU the numbers came from
    [inp] = run.inputs.dataset_inputs
    assert (inp.dataset.name, inp.dataset.digest) == ("tiny", "0123456789abcdef")
    assert {t.key: t.value for t in inp.tags} == {"mlflow.data.context": "eval"}
    assert inp.dataset.source_type == "local" and json.loads(inp.dataset.source)["uri"].endswith("tiny.yaml")
    assert json.loads(inp.dataset.profile)["num_rows"] == 1
    schema = [c["name"] for c in json.loads(inp.dataset.schema)["mlflow_colspec"]]
    assert schema == ["id", "query", "tags", "expected"]
    # an edited test set is a new digest; the same file on another run, the same dataset
    r.testset_sha256 = "fedcba9876543210" + "0" * 48
    run_id = log_report(cfg, r, RunOptions(run_name="mine", plots=False))
    again = MlflowClient().get_run(run_id)
    assert again.info.run_name == "mine" and again.inputs.dataset_inputs[0].dataset.digest == "fedcba9876543210"
    r.label = "rrf"
    run_id = log_report(cfg, r, RunOptions(plots=False))
    assert MlflowClient().get_run(run_id).info.run_name == "tiny on k@v000001 [rrf]"


def test_a_dataset_another_run_inserted_at_the_same_moment_is_linked_on_the_next_try(make_report):
    """A sweep's candidates on a cluster log the same test set at once: MLflow's store may refuse the second insert
    of the dataset's row (seen in CI against an MLflow server: ``UNIQUE constraint failed: datasets...``). The
    write is tried again and links the row; any other error is raised at once, and the race past the last try
    too."""
    import pytest
    from ragrig.eval.tracking.datasets import log_dataset

    class Client:
        def __init__(self, errors):
            self.errors, self.calls = list(errors), 0

        def log_inputs(self, run_id, datasets):
            self.calls += 1
            assert run_id == "r1" and len(datasets) == 1
            if self.errors:
                raise self.errors.pop(0)

    race = RuntimeError("BAD_REQUEST: (sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                        "datasets.name, datasets.digest")
    report = make_report()
    ok = Client([race])
    log_dataset(ok, "r1", report)
    assert ok.calls == 2
    pg = Client([RuntimeError('duplicate key value violates unique constraint "datasets_pk"')])
    log_dataset(pg, "r1", report)
    assert pg.calls == 2
    other = Client([RuntimeError("BAD_REQUEST: no such run")])
    with pytest.raises(RuntimeError, match="no such run"):
        log_dataset(other, "r1", report)
    assert other.calls == 1
    always = Client([race, race, race])
    with pytest.raises(RuntimeError, match="UNIQUE constraint failed"):
        log_dataset(always, "r1", report)
    assert always.calls == 3
