"""A sweep on a Dask cluster (each config a task on a 2-worker LocalCluster, joined by its address) gives the
in-process sweep's rows, row for row, and MLflow's parent run with one nested child per config: logged by the
workers to an `mlflow server` (127.0.0.1, started here), or by the driver to a SQLite store. The cluster and the
server are started once for the file and stopped by process group (servers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ragrig.eval.sweep.run import run_sweep
from ragrig.eval.sweep.spec import load_sweep, resolve
from ragrig.flows.cli import main
from ragrig.flows.runners import cluster_executor

sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
from servers import mlflow_server as started_mlflow_server  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> str:
    from distributed import LocalCluster
    from ragrig.flows.runners import SCHEDULER_HTTP

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, scheduler_kwargs=SCHEDULER_HTTP) as c:
        yield c.scheduler_address


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory) -> str:
    with started_mlflow_server(tmp_path_factory.mktemp("mlflow-server")) as url:
        yield url


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory, sample_part) -> Path:
    """Three fusion configs of part of the sample (tests/sample_part.py) over one index, in a home every worker
    reads (the workers do not see a test's RAGRIG_HOME: the home is in the config). The second encoder's view is
    off: where the configs run is what differs here, and it would cost a second embedding of the corpus."""
    corpus, testset = sample_part
    d = tmp_path_factory.mktemp("sweep")
    f = d / "sweep.yaml"
    f.write_text(f"""name: dist
set: ["home={d / 'home'}", "corpus.path={corpus}", "eval.ragas=false",
      "retrieval.fusion.weights.vector2=0", "eval.testsets=[{testset}]"]
configs:
  - {{retrieval.fusion.method: rrf}}
  - {{retrieval.fusion.method: weighted, retrieval.fusion.normalization: minmax}}
  - {{retrieval.fusion.weights.vector: 0}}
""")
    return f


def _sweep(path: Path, *sets: str):
    spec = load_sweep(path)
    return run_sweep(spec, list(sets), progress=False, configs=resolve(spec, list(sets)))


def _children(uri: str, parent_id: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    parent = client.get_run(parent_id)
    runs = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'")
    assert parent.info.status == "FINISHED" and "best.ndcg_at_10" in parent.data.metrics
    return runs


def test_a_sweep_on_the_cluster_equals_the_in_process_sweep(cluster, mlflow_server, sweep_file):
    local = _sweep(sweep_file, "mlflow.enabled=false")
    over = [f"mlflow.tracking_uri={mlflow_server}", "mlflow.experiment=dist", "flow.runner=dask",
            f"flow.address={cluster}"]
    spec = load_sweep(sweep_file)
    configs = resolve(spec, over)
    with cluster_executor(configs[0][2]) as executor:
        dist = run_sweep(spec, over, progress=False, configs=configs, executor=executor)
    assert [(r.label, r.testset, r.index_key) for r in dist.rows] == [
        (r.label, r.testset, r.index_key) for r in local.rows]
    assert [r.metrics for r in dist.rows] == [r.metrics for r in local.rows]
    assert len({r.metrics["ndcg@10"] for r in dist.rows}) > 1  # the configs differ: not one result three times
    assert len(dist.indexes) == 1 and dist.indexes[0].embedded == 0  # ingested once, by the in-process sweep
    # the workers logged the children to the server, under the driver's parent
    children = _children(mlflow_server, dist.parent_run_id)
    assert sorted(r.info.run_id for r in children) == sorted(r.run_id for r in dist.rows)
    assert all(r.info.status == "FINISHED" and "ndcg_at_10" in r.data.metrics for r in children)
    by_id = {r.info.run_id: r for r in children}
    assert [by_id[r.run_id].data.metrics["ndcg_at_10"] for r in dist.rows] == [r.metrics["ndcg@10"] for r in dist.rows]


def test_with_a_sqlite_store_the_driver_logs_the_children(prefect_api, cluster, sweep_file, tmp_path):
    """`ragrig sweep --address` (the sweep flow, the CLI's shortcut): MLflow's default SQLite store takes no
    concurrent writers, so the tasks return their reports and the driver logs each child."""
    import json

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "sweep.json"
    assert main(["sweep", str(sweep_file), "-q", "--address", cluster, "--output-json", str(out),
                 "--set", f"mlflow.tracking_uri={uri}"]) == 0
    result = json.loads(out.read_text())
    children = _children(uri, result["parent_run_id"])
    assert sorted(r.info.run_id for r in children) == sorted(r["run_id"] for r in result["rows"])
    assert len(children) == 3
