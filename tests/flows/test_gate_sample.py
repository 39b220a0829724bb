"""The gate end to end on the real sample corpus and test set. First the project gates itself: the default config,
ingested here, against the committed baseline (``datasets/baselines/sample.json``) under the default policy, with
its JUnit and Markdown reports (``make test`` ran this as a command of its own before the suite, 17 s of its wall
spent alone; here it runs beside the other tests and shares this test's ingest). Then repeated evaluations of the
default config never BLOCK against a baseline taken from it (the baseline's own run and one more: every run is
bit-identical, ``test_retriever.py`` ``test_results_are_deterministic``, and the run here equals the baseline to the
bit, so more repeats add time, not evidence); a degraded config (both vector sources off) BLOCKs, naming the
metrics and the flipped queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_the_default_passes_its_committed_baseline_repeats_never_block_and_a_degraded_config_does(tmp_path, capsys):
    import xml.etree.ElementTree as ET

    policy = str(ROOT / "configs" / "gate" / "default.yaml")
    committed, junit, summary = ROOT / "datasets" / "baselines" / "sample.json", tmp_path / "j.xml", tmp_path / "s.md"
    rc = main(["gate", "--baseline", str(committed), "--policy", policy, "--junit", str(junit), "--markdown",
               str(summary), "--output-json", str(tmp_path / "committed.json")])  # ingests the sample first
    assert rc == 0, summary.read_text() if summary.exists() else capsys.readouterr()
    assert json.loads((tmp_path / "committed.json").read_text())["verdict"] in ("PASS", "WARN")
    suites = ET.parse(junit).getroot()
    assert int(suites.get("tests", 0)) > 0 and int(suites.get("failures", 0)) == 0, summary.read_text()
    base = tmp_path / "baseline.json"
    assert main(["gate", "--baseline", str(base), "--update-baseline", "--no-ingest"]) == 0
    out = tmp_path / "again.json"
    assert main(["gate", "--baseline", str(base), "--policy", policy, "--no-ingest", "--output-json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["verdict"] != "BLOCK"
    checks = result["results"][0]["checks"]
    assert checks and all(c["candidate"] == c["baseline"] for c in checks if c["baseline"] is not None)
    assert result["results"][0]["flips"] == []  # the same metrics, to the bit, and the same hits
    out = tmp_path / "bad.json"
    rc = main(["gate", "--baseline", str(base), "--policy", policy, "--no-ingest", "--output-json", str(out),
               "--set", "retrieval.fusion.weights.vector=0", "--set", "retrieval.fusion.weights.vector2=0"])
    assert rc == 1
    result = json.loads(out.read_text())
    assert result["verdict"] == "BLOCK"
    blocked = [c["name"] for c in result["results"][0]["checks"] if c["verdict"] == "BLOCK"]
    assert "ndcg@10" in blocked
    assert result["results"][0]["flips"], "a BLOCK names the queries that flipped"
    printed = capsys.readouterr().out
    assert "BLOCK: ndcg@10: dropped" in printed and "verdict: BLOCK" in printed
