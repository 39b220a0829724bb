"""Scale-out pieces on real engines, on loopback: ingest into a `chroma run` server, evaluate against an
`mlflow server`, and an ingest through a Dask LocalCluster equal to the default thread runner's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from ragrig.flows.cli import main  # noqa: E402
from servers import free_port, mlflow_server, server  # noqa: E402

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
DOCS = {"a.md": "# A\n\n## Move\n\nMove six inches.\n\n## Shoot\n\nRoll dice to shoot.\n",
        "b.md": "# B\n\n## Cover\n\nCover gives a save against shooting.\n"}
TESTSET = "name: t\ncases:\n  - id: cover\n    query: what does cover do?\n    expect: [{doc: b.md, section: Cover}]\n"


def sets(corpus, *more: str) -> list[str]:
    out = []
    for item in [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]", "eval.ragas=false", *more]:
        out += ["--set", item]
    return out


def test_ingest_and_query_through_a_chroma_server(tmp_path, write_files, capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    port = free_port()
    with server([str(BIN / "chroma"), "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(tmp_path / "chroma")],
                f"http://127.0.0.1:{port}/api/v2/heartbeat", log=tmp_path / "chroma.log"):
        args = sets(corpus, "index.chroma.mode=http", f"index.chroma.port={port}")
        assert main(["ingest", "--no-prefect", "-q", *args]) == 0
        assert main(["query", "does cover help?", "--json", *args]) == 0
        out = capsys.readouterr().out
        assert '"doc_id": "b.md"' in out
        assert main(["health", *args]) == 0


def test_evaluation_logs_to_an_mlflow_server(tmp_path, write_files, capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    (tmp_path / "ts.yaml").write_text(TESTSET)
    with mlflow_server(tmp_path) as url:
        args = sets(corpus, f"mlflow.tracking_uri={url}", f"mlflow.artifact_location={tmp_path / 'artifacts'}")
        assert main(["ingest", "--no-prefect", "-q", *args]) == 0
        assert main(["eval", "--no-prefect", "--testset", str(tmp_path / "ts.yaml"), "--run-name", "via-server", *args]) == 0
        import mlflow

        mlflow.set_tracking_uri(url)
        runs = mlflow.search_runs(search_all_experiments=True, filter_string="tags.`mlflow.runName` = 'via-server'",
                                  output_format="list")
        assert len(runs) == 1 and "ndcg_at_10" in runs[0].data.metrics


def test_dask_runner_builds_the_same_index_as_threads(prefect_api, tmp_path, write_files):
    from ragrig.configs.load import load_config
    from ragrig.flows.ingest import run_ingest
    from ragrig.retrieval.index.version import IndexVersion

    corpus = write_files(tmp_path / "corpus", DOCS)
    ids, vecs = {}, {}
    for runner in ("local", "dask"):
        over = [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]", f"home={tmp_path / runner}",
                f"flow.runner={runner}", "flow.extract_batch=1",
                "flow.workers=1"]  # one worker process: a cluster of two is tests/ops/test_distributed_ingest.py's
        stats = run_ingest(load_config(None, over), None, over, progress=False)
        assert stats["published"]
        v = IndexVersion.current(load_config(None, over))
        got = [c.chunk_id for c in v.chunks]
        order = np.argsort(got)
        ids[runner] = [got[i] for i in order]
        vecs[runner] = np.asarray(v.vectors)[order]
    assert ids["local"] == ids["dask"] == sorted(ids["local"])
    assert np.allclose(vecs["local"], vecs["dask"], atol=1e-6)
