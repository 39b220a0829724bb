"""Evaluation end to end: runner -> MLflow (read back), secret scrubbing, the ``ragrig eval`` CLI and the flow."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow

SECRET = "sk-test-secret-123456"

WEAPONS = """# Weapon Rules

Weapons can carry special rules that change how an attack resolves.

## Accurate x

You can retain x attack dice as normal successes without rolling them.

## Lethal x+

Your successes are critical successes on a roll of x+ instead of only on a 6.

## Balanced

You can re-roll one of your attack dice.
"""
ACTIONS = """# Actions

## Dash

An operative can move up to three inches in a straight line.

## Charge

The operative moves up to six inches and must finish within engagement range of an enemy.
"""
FAQ = """# FAQ

## Healing

Operatives regain wounds only through specific abilities such as medics.
"""
# twelve more sections, so a top 10 can miss something
FILLER = "".join(
    f"## Terrain piece {i}\n\nOperatives may climb terrain piece {i} and move across it.\n\n" for i in range(12)
)
CORPUS = {"weapons.md": WEAPONS, "actions.md": ACTIONS, "faq.md": FAQ, "terrain.md": "# Terrain\n\n" + FILLER}

TESTSET = """name: tiny-rules
cases:
  - id: accurate
    query: "retain attack dice without rolling them"
    expect:
      - doc: weapons.md
        section: Accurate x
        grade: 2
      - doc: weapons.md
        section: Weapon Rules
    tags: [single-hop]
  - id: dash
    query: "How far can an operative dash?"
    expect:
      - doc: actions.md
        section: Actions > Dash
        grade: 2
    tags: [single-hop, exact-term]
  - id: secret-miss
    query: "{secret} how can an operative climb and move across terrain?"
    expect:
      - doc: faq.md
        section: healing
    tags: [paraphrase]
"""

SETS = ["corpus.markdown_extractor=plain"]


@pytest.fixture
def corpus(tmp_path, write_files):
    return write_files(tmp_path / "corpus", CORPUS)


@pytest.fixture
def testset(tmp_path) -> Path:
    p = tmp_path / "tiny.yaml"
    p.write_text(TESTSET.replace("{secret}", SECRET), encoding="utf-8")
    return p


def ingest(cfg, embedder) -> None:
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().published


def cli_sets(cfg_sets: list[str], corpus: Path) -> list[str]:
    argv: list[str] = []
    for item in [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]", *cfg_sets]:
        argv += ["--set", item]
    return argv


def test_evaluate_and_log_to_mlflow_without_leaking_secrets(
    corpus, testset, make_config, embedder, ragrig_home, monkeypatch, tmp_path
):
    from mlflow.tracking import MlflowClient
    from ragrig.eval.evaluate import evaluate
    from ragrig.eval.testset import load_testset
    from ragrig.eval.tracking.runs import RunOptions, log_report
    from ragrig.eval.tracking.store import tracking_uri
    from ragrig.retrieval.search.retriever import Retriever

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # the secret also ends up in a config value (and so in the index key) and in a query
    cfg = make_config(corpus, *SETS, index__name=SECRET)
    ingest(cfg, embedder)
    ts = load_testset(testset)
    report = evaluate(cfg, ts, Retriever(cfg, embedder=embedder))

    # the report itself
    assert report.index_version == "v000001" and report.k_values == [1, 3, 5, 10, 20, 100]
    rows = {r["id"]: r for r in report.per_query}
    assert list(rows) == ["accurate", "dash", "secret-miss"]
    assert rows["dash"]["metrics"]["mrr@1"] == 1.0 and rows["dash"]["top"][0]["chunk_id"] == "actions.md#0"
    assert rows["accurate"]["expected"] == ["weapons.md#accurate x", "weapons.md#weapon rules"]
    assert rows["secret-miss"]["missed@10"] == ["faq.md#healing"]
    assert set(report.per_tag) == {"single-hop", "exact-term", "paraphrase"}
    assert report.per_tag["single-hop"]["n"] == 2.0
    assert report.per_tag["paraphrase"]["ndcg@10"] == rows["secret-miss"]["metrics"]["ndcg@10"] == 0.0
    mean = sum(r["metrics"]["ndcg@10"] for r in rows.values()) / 3
    assert report.overall["ndcg@10"] == pytest.approx(mean)
    assert set(report.latency_ms) == {"p50", "p95", "p99", "mean", "max"}

    run_id = log_report(cfg, report, RunOptions(run_name="tiny"))
    uri = tracking_uri(cfg)
    assert uri == f"sqlite:///{ragrig_home.resolve() / 'mlflow' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    assert params["index.version"] == "v000001"
    assert params["testset.sha256"] == hashlib.sha256(testset.read_bytes()).hexdigest()
    assert params["testset.name"] == "tiny-rules"
    assert params["retrieval.fusion.rrf_k"] == "60.0" and params["chunking.max_header_level"] == "4"
    assert params["index.name"] == "***"
    assert metrics["ndcg_at_10"] == pytest.approx(report.overall["ndcg@10"])
    assert metrics["recall_at_100"] == pytest.approx(report.overall["recall@100"])
    assert metrics["tag.single-hop.ndcg_at_10"] == pytest.approx(report.per_tag["single-hop"]["ndcg@10"])
    assert "latency_ms.p50" in metrics

    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"per_query.csv", "config.yaml", "recall_ndcg_at_k.png", "per_tag.png", "failed_cases.md",
            "per_query.json"} <= names
    local = Path(client.download_artifacts(run_id, "", str(tmp_path / "artifacts")))
    csv_text = (local / "per_query.csv").read_text()
    assert csv_text.splitlines()[0].startswith("id,query,tags,ndcg@10,recall@10,mrr@10,precision@5")
    assert "secret-miss" in (local / "failed_cases.md").read_text()
    assert (local / "recall_ndcg_at_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # no secret anywhere: params, tags, every text artifact
    for key, value in {**params, **tags}.items():
        assert SECRET not in value, key
    texts = 0
    for f in local.rglob("*"):
        if f.is_file() and f.suffix != ".png":
            assert SECRET not in f.read_text(encoding="utf-8"), f.name
            texts += 1
    assert texts >= 4
    assert "***" in csv_text  # the query was masked, not dropped


def test_cli_eval_writes_json_and_bad_testset_exits_2(corpus, testset, make_config, embedder, tmp_path, capsys):
    cfg = make_config(corpus, *SETS)
    ingest(cfg, embedder)
    out = tmp_path / "out" / "eval.json"
    sets = cli_sets([*SETS, "mlflow.enabled=false"], corpus)
    assert main(["eval", "--no-prefect", *sets, "--testset", str(testset), "--output-json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["testset"] == "tiny-rules" and result["index"]["version"] == "v000001"
    assert 0.0 <= result["overall"]["ndcg@10"] <= 1.0
    assert set(result["per_tag"]) == {"single-hop", "exact-term", "paraphrase"}
    assert [r["id"] for r in result["per_query"]] == ["accurate", "dash", "secret-miss"]
    assert "mlflow_run_id" not in result
    printed = capsys.readouterr().out
    assert "ragrig eval: tiny-rules" in printed and "secret-miss" in printed

    missing = tmp_path / "missing.yaml"
    assert main(["eval", "--no-prefect", *sets, "--testset", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "missing.yaml" in err and "file not found" in err


def test_evaluate_flow(prefect_api, corpus, testset, make_config, embedder):
    from ragrig.flows.evaluate import evaluate_flow

    sets = [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]", *SETS, "mlflow.enabled=false"]
    ingest(make_config(corpus, *SETS), embedder)
    state = evaluate_flow(overrides=sets, testsets=[str(testset)], return_state=True)
    assert state.is_completed()
    [result] = state.result()
    assert result["testset"] == "tiny-rules" and len(result["per_query"]) == 3
    assert result["per_query"][1]["metrics"]["mrr@1"] == 1.0

    from prefect.artifacts import Artifact

    artifact = Artifact.get("eval-tiny-rules")
    assert artifact is not None and "ndcg@10" in artifact.data


def test_cli_run_ingests_evaluates_and_reports(corpus, testset, tmp_path, capsys):
    """`ragrig run` (what `make run` calls): ingest + eval + MLflow, one JSON report, exit 0; twice = no new version."""
    out = tmp_path / "run.json"
    args = ["run", "--no-prefect", "--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null",
            "--set", f"eval.testsets=[{testset}]", "--output-json", str(out)]
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert report["testset"] == "tiny-rules" and report["index"]["version"] == "v000001"
    assert {r["id"] for r in report["per_query"]} == {"accurate", "dash", "secret-miss"}
    printed = capsys.readouterr().out
    assert "ragrig ingest" in printed and "ragrig eval: tiny-rules" in printed
    assert "mlflow ui --backend-store-uri" in printed
    assert main(args) == 0  # second run: nothing changed, same version evaluated again
    assert json.loads(out.read_text())["index"]["version"] == "v000001"


def test_evaluate_flow_on_a_loaded_config_runs_each_step_as_a_task(prefect_api, corpus, testset, make_config,
                                                                    embedder, monkeypatch):
    import ragrig.flows.params as params
    from mlflow.tracking import MlflowClient
    from ragrig.flows.evaluate import evaluate_flow

    cfg = make_config(corpus, *SETS)
    ingest(cfg, embedder)
    monkeypatch.setattr(params, "load_config", lambda *a: pytest.fail("the flow loaded the config again"))
    stages = []  # the steps the flow ran as tasks (the task wrapper, recorded; the API records them asynchronously)
    import ragrig.tasks.executor as prefect_executor

    real = prefect_executor.run_stage
    monkeypatch.setattr(prefect_executor, "run_stage",
                        lambda name, fn, *args: stages.append(name) or real(name, fn, *args))
    state = evaluate_flow(config=cfg, testsets=[str(testset)], run_name="from-the-flow", return_state=True)
    assert state.is_completed()
    [result] = state.result()
    assert MlflowClient().get_run(result["mlflow_run_id"]).info.run_name == "from-the-flow"
    assert stages == ["load-testsets", "open-index", "resolve-expectations", "retrieve-and-score", "log-mlflow"]


def test_cli_run_through_prefect_loads_the_config_once(prefect_api, corpus, testset, tmp_path, capsys, monkeypatch):
    """`ragrig run` as `make run` calls it (Prefect flows): the flows get the CLI's config, not a path to reload."""
    import ragrig.flows.params as params

    monkeypatch.setattr(params, "load_config", lambda *a: pytest.fail("a flow loaded the config again"))
    out = tmp_path / "run.json"
    args = ["run", "--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null",
            "--set", f"eval.testsets=[{testset}]", "--set", "mlflow.enabled=false", "--output-json", str(out)]
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert report["testset"] == "tiny-rules" and report["index"]["version"] == "v000001"
    printed = capsys.readouterr().out
    assert "ragrig ingest" in printed and "ragrig eval: tiny-rules" in printed
