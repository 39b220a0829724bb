"""``ragrig tune`` end to end on the sample corpus (one ingest, a tiny space, MLflow on): the default here is
BM25 alone (both vector sources off, the second encoder's too), which hybrid retrieval beats on every fold, so the winner is written; the fold scores are on each
candidate's nested run; then the honesty check on the same index writes nothing. Bounded: < 75 s of CPU (the
machine's other work stretches the wall clock; CPU time is what the test itself costs)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from ragrig.configs.load import load_config
from ragrig.flows.cli import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_tune_writes_a_significant_winner_and_logs_fold_scores(tmp_path, capsys):
    t0 = time.process_time()
    space = tmp_path / "space.yaml"
    space.write_text(f"""name: tiny
set: ["corpus.path={ROOT / 'datasets' / 'sample'}", "eval.ragas=false", "retrieval.max_hops=0",
      "retrieval.fusion.weights.vector=0", "retrieval.fusion.weights.vector2=0",
      "eval.testsets=[{ROOT / 'datasets' / 'testsets' / 'sample.yaml'}]"]
configs:
  - {{retrieval.fusion.weights.vector: 1.0}}
  - {{retrieval.fusion.weights.vector: 1.0, retrieval.fusion.method: rrf}}
folds: 5
seed: 1
""")
    out, written = tmp_path / "tune.json", tmp_path / "tuned.yaml"
    assert main(["tune", str(space), "--output-json", str(out), "--write", str(written), "-q"]) == 0
    r = json.loads(out.read_text())
    assert [c["label"] for c in r["candidates"]] == ["default", "vector=1.0", "vector=1.0, method=rrf"]
    assert r["cases"] == 100 and sorted(r["fold_sizes"]) == [20] * 5 and len(r["picks"]) == 5
    assert "default" not in r["picks"] and r["significant"] and r["gain"] > 0 and r["p"] < 0.05
    assert r["estimate_ci"][0] <= r["estimate"] <= r["estimate_ci"][1]
    assert r["written"] == str(written) and r["winner"] != "default"
    cfg = load_config(str(written))
    assert cfg.retrieval.fusion.weights["vector"] == 1.0
    assert "written to" in capsys.readouterr().out

    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    parent = client.get_run(r["parent_run_id"])
    assert parent.data.metrics["tune.heldout"] == pytest.approx(r["estimate"])
    assert parent.info.run_name == "tune: tiny" and parent.data.tags["ragrig.tune.verdict"].startswith("winner:")
    child = client.get_run(r["candidates"][1]["run_ids"][0])
    assert child.data.tags["mlflow.parentRunId"] == r["parent_run_id"]
    folds = [child.data.metrics[f"tune.fold.{f}.ndcg_at_10"] for f in range(5)]
    assert folds == pytest.approx(r["candidates"][1]["fold_means"])

    # the honesty check on the same index: tune on half, score the pick on the other half, write nothing
    out2 = tmp_path / "honest.json"
    assert main(["tune", str(space), "--holdout-fraction", "0.5", "--seed", "2", "--folds", "3", "-q",
                 "--set", "mlflow.enabled=false", "--output-json", str(out2), "--write", str(tmp_path / "no.yaml")]) == 0
    h = json.loads(out2.read_text())
    assert h["holdout"]["tune_cases"] + h["holdout"]["held_cases"] == 100 and h["written"] is None
    assert not (tmp_path / "no.yaml").exists()
    assert isinstance(h["holdout"]["within"], bool) and isinstance(h["holdout"]["gain_within"], bool)
    assert h["holdout"]["held_gain"] == pytest.approx(h["holdout"]["held_score"] - h["holdout"]["held_default"])
    assert h["holdout_runs"] == [h["holdout"]]

    # the check for several seeds over one evaluation: each seed's row is what a run with that seed alone gives
    out3 = tmp_path / "seeds.json"
    assert main(["tune", str(space), "--holdout-fraction", "0.5", "--holdout-seeds", "2", "4", "--folds", "3",
                 "-q", "--set", "mlflow.enabled=false", "--output-json", str(out3)]) == 0
    runs = json.loads(out3.read_text())["holdout_runs"]
    assert [x["seed"] for x in runs] == [2, 4] and runs[0] == h["holdout"]
    assert runs[1]["held_score"] != runs[0]["held_score"]  # another split of the cases
    alone = tmp_path / "seed4.json"
    assert main(["tune", str(space), "--holdout-fraction", "0.5", "--seed", "4", "--folds", "3", "-q",
                 "--set", "mlflow.enabled=false", "--output-json", str(alone)]) == 0
    assert json.loads(alone.read_text())["holdout"] == runs[1]
    assert time.process_time() - t0 < 75


def test_tune_bad_input_is_one_line(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text("name: s\ngrid: {retrieval.fusion.bogus: [1]}\n")
    assert main(["tune", str(space)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {space}: candidate 'bogus=1'") and "\n" not in err
    ts = tmp_path / "ts.yaml"
    ts.write_text("name: t\ncases:\n" + "".join(
        f"  - {{id: c{i}, query: q{i}, expect: [{{doc: a.md}}], tags: [{'broad' if i < 2 else 'single-hop'}]}}\n"
        for i in range(8)))
    space.write_text("name: s\nconfigs: [{retrieval.top_k: 5}]\nfolds: 3\n")
    assert main(["tune", str(space), "--testset", str(ts)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {ts}: tag 'broad' has 2 case(s), fewer than folds=3; "
                                               "use --folds 2 or fewer, or --no-stratify")
    assert main(["tune", str(space), "--testset", str(ts), "--folds", "9"]) == 2
    assert "folds=9 is larger than the test set's 8 cases" in capsys.readouterr().err
    assert main(["tune", str(space), "--testset", str(ts), "--folds", "2", "--holdout-seeds", "1", "2"]) == 2
    assert capsys.readouterr().err.strip() == ("error: tune: --holdout-seeds needs --holdout-fraction (the share of "
                                               "cases each seed holds out)")
    assert main(["tune", str(space), "--testset", str(ts), "--alpha", "2"]) == 2
    assert capsys.readouterr().err.strip() == "error: --alpha=2.0: Input should be less than 1"
