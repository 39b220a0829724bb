"""The test-set lifecycle end to end, on a copy of part of the sample corpus and the sample test set's cases on
it: ingest, the scenario's edits (benchmarks/testset_lifecycle.py: rename a header, edit a section, delete a
section, move a file), re-ingest, then ``ragrig testset check`` (and ``--write``), ``ragrig diff``,
``ragrig eval --case`` and the publish-triggered evaluate flow with its artifacts and MLflow run."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from ragrig.eval.testset import load_testset
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
DOCS = ["core/actions.md", "core/fighting.md", "weapons/weapon-rules.md", "core/shooting.md", "faq.md",
        "core/orders.md"]


def scenario():
    spec = importlib.util.spec_from_file_location("lifecycle_scenario", ROOT / "benchmarks" / "testset_lifecycle.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def world(tmp_path, embedder):
    """Two published versions of the corpus copy (before and after the edits) and the test set, as CLI flags."""
    from ragrig.configs.load import load_config
    from ragrig.eval.testset import TestSet, dump_testset
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    corpus = tmp_path / "corpus"
    for rel in DOCS:
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "datasets" / "sample" / rel, corpus / rel)
    sample = load_testset(ROOT / "datasets" / "testsets" / "sample.yaml")
    cases = [c for c in sample.cases if all(e.doc in DOCS for e in c.expect)]
    testset = tmp_path / "rules.yaml"
    testset.write_text("# the sample test set's cases on this part of the corpus\n"
                       + dump_testset(TestSet(name="rules", cases=cases)), encoding="utf-8")
    sets = [f"corpus.path={corpus}", f"eval.testsets=[{testset}]", "retrieval.synonyms=null",
            "corpus.markdown_extractor=plain"]
    cfg = load_config(overrides=sets)

    def ingest():
        pipe = IngestPipeline(cfg, progress=False)
        pipe.embedder = embedder
        assert pipe.run().published

    ingest()
    edits = scenario().apply_edits(corpus)
    assert len(edits) == 4
    ingest()
    argv = [a for s in sets for a in ("--set", s)]
    return {"cfg": cfg, "argv": argv, "sets": sets, "testset": testset, "n": len(cases)}


def test_check_write_diff_and_one_case(world, tmp_path, capsys):
    argv, testset = world["argv"], world["testset"]
    out = tmp_path / "check.json"
    assert main(["testset", "check", *argv, "--output-json", str(out)]) == 1  # a case lost its evidence
    err = capsys.readouterr().err
    assert "hidden-operative-shoot" in err and "lost their evidence" in err
    [check] = json.loads(out.read_text())["checks"]
    assert (check["version"], check["reference_version"]) == ("v000002", "v000001")
    status = {c["id"]: c for c in check["cases"]}
    dash = status["dash-distance"]["expectations"][0]
    assert status["dash-distance"]["status"] == "moved" and dash["now_section"] == "Movement Actions > Sprint"
    shooting, melee = status["shoot-into-melee"]["expectations"]
    assert shooting["status"] == "ok" and shooting["now_doc"] == "core/shooting.md"
    assert status["shoot-into-melee"]["status"] == "moved" and melee["now_doc"] == "rules/fighting.md"
    charge = status["charge-distance"]["expectations"][0]
    assert status["charge-distance"]["status"] == "changed" and any('[-2".-]{+3".+}' in d for d in charge["diff"])
    assert status["hidden-operative-shoot"]["status"] == "gone"
    assert "section 'Silent' matches no header" in status["hidden-operative-shoot"]["expectations"][1]["reason"]
    # moved: the two Dash cases and the four on core/fighting.md; changed: the two Charge cases; gone: Silent's
    assert world["n"] == 35 and check["counts"] == {"ok": 26, "moved": 6, "changed": 2, "gone": 1}

    assert main(["testset", "check", *argv, "--write"]) == 1
    text = testset.read_text(encoding="utf-8")
    assert text.startswith("# the sample test set's cases on this part of the corpus\n")
    assert "section: Movement Actions > Sprint" in text and "doc: rules/fighting.md" in text
    again = {c.id: c for c in load_testset(testset).cases}
    assert again["dash-distance"].expect[0].fingerprint is not None
    out2 = tmp_path / "check2.json"
    assert main(["testset", "check", *argv, "--output-json", str(out2)]) == 1
    counts = json.loads(out2.read_text())["checks"][0]["counts"]
    assert counts == {"ok": 32, "moved": 0, "changed": 2, "gone": 1}  # the edits stay flagged until accepted

    diff_json = tmp_path / "diff.json"
    assert main(["diff", *argv, "--output-json", str(diff_json), "--markdown", str(tmp_path / "diff.md")]) == 0
    d = json.loads(diff_json.read_text())
    docs = {(x["change"], x["doc_id"]) for x in d["documents"]}
    assert docs == {("changed", "core/actions.md"), ("changed", "weapons/weapon-rules.md"),
                    ("moved", "rules/fighting.md")}
    removed = [c for c in d["chunks"] if c["change"] == "removed"]
    assert [c["header"] for c in removed] == ["Weapon Rules > Usage Restrictions > Silent"]
    touched = {t["id"]: t for t in d["testsets"][0]["touched"]}
    assert {"dash-distance", "charge-distance", "hidden-operative-shoot", "shoot-into-melee"} <= set(touched)
    assert "expected" in touched["dash-distance"]["via"] and set(touched["dash-distance"]["delta"]) == {
        "ndcg@10", "recall@10", "mrr@10"}
    assert touched["hidden-operative-shoot"]["status"] == "gone" and touched["hidden-operative-shoot"]["after"] == {}
    assert d["testsets"][0]["paired"]["n"] >= 3
    assert "### Cases that touch the changes: rules" in (tmp_path / "diff.md").read_text()
    capsys.readouterr()

    assert main(["eval", "--no-prefect", *argv, "--case", "dash-distance", "--case", "lethal-5-plus"]) == 0
    printed = capsys.readouterr().out
    assert "dash-distance (rules on" in printed and "lethal-5-plus (rules on" in printed
    assert "bm25" in printed and "vector" in printed and "✓" in printed
    assert "expected core/actions.md#movement actions > sprint" in printed
    assert main(["eval", "--no-prefect", *argv, "--case", "nope"]) == 2
    assert "--case 'nope': no such case in rules" in capsys.readouterr().err
    assert main(["testset", "check", *argv, "--version", "v000009"]) == 2
    assert "index version 'v000009' is not published" in capsys.readouterr().err
    assert main(["testset", "check", *argv, "--accept", "charge-distance"]) == 2
    assert "--accept needs --write" in capsys.readouterr().err
    assert main(["diff", *argv, "--from", "v000002", "--to", "v000001"]) == 2
    # against no reference: names only, so nothing is moved or changed (the written fingerprints still count)
    assert main(["testset", "check", *argv, "--against", "none", "--output-json", str(out)]) == 1
    assert json.loads(out.read_text())["checks"][0]["reference_version"] is None


def test_the_triggered_evaluation_checks_diffs_gates_and_fails_on_gone_evidence(world, prefect_api):
    from mlflow.tracking import MlflowClient
    from prefect.artifacts import Artifact
    from ragrig.eval.tracking.store import tracking_uri
    from ragrig.flows.evaluate import evaluate_flow

    state = evaluate_flow(overrides=world["sets"], version="v000002", return_state=True)
    assert state.is_failed()
    assert "lost their evidence: rules: hidden-operative-shoot" in state.message
    check = Artifact.get("testset-check")
    assert check is not None and "| hidden-operative-shoot | GONE |" in check.data
    assert "→ `core/actions.md` § `Movement Actions > Sprint`" in check.data
    diff = Artifact.get("version-diff")
    assert diff is not None and "## Index diff:" in diff.data and "v000001 → v000002" in diff.data
    assert "## Retrieval gate:" in diff.data and "Holm-corrected" in diff.data
    client = MlflowClient(tracking_uri(world["cfg"]))
    [run] = client.search_runs(client.get_experiment_by_name("ragrig").experiment_id)
    assert run.data.tags["ragrig.previous_version"] == "v000001" and run.data.tags["ragrig.gate"] in {
        "PASS", "WARN", "BLOCK"}
    assert run.data.metrics["testset_check.gone"] == 1.0 and run.data.metrics["testset_check.moved"] == 6.0
    assert run.data.metrics["diff.chunks.removed"] == 1.0 and "hops.1.recall_gain_at_10" in run.data.metrics
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"testset_check.md", "version_diff.md", "version_diff.json", "gate.md"} <= names
