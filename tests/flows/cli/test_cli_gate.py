"""``ragrig gate`` on hand-built eval reports (no index): exit 0 on PASS/WARN, 1 on BLOCK, 2 on bad input, the
JUnit/Markdown/JSON outputs, and --update-baseline."""

from __future__ import annotations

import json

from ragrig.eval.gate import BLOCK, baseline_payload
from ragrig.flows.cli import main


def run(values: list[float], name: str = "t") -> dict:
    rows = [{"id": f"q{i}", "query": f"query {i}", "tags": ["single-hop"],
             "metrics": {"ndcg@10": v, "recall@10": v, "mrr@10": v, "hit_rate@10": float(v > 0),
                         "mrr@100": 1.0 if v > 0 else 0.0}} for i, v in enumerate(values)]
    return {"testset": name, "testset_sha256": "abc", "per_query": rows}


def test_cli_exit_codes_and_update_baseline(tmp_path):
    base, good, bad = tmp_path / "base.json", tmp_path / "good.json", tmp_path / "bad.json"
    base.write_text(json.dumps(baseline_payload([{**run([0.8] * 20), "per_tag": {}, "overall": {}}])))
    good.write_text(json.dumps(run([0.8] * 20)))
    bad.write_text(json.dumps(run([0.3] * 20)))
    junit, md, out = tmp_path / "g.xml", tmp_path / "g.md", tmp_path / "g.json"
    args = ["gate", "--baseline", str(base), "--set", "mlflow.enabled=false"]
    assert main([*args, "--candidate", str(good)]) == 0
    outputs = ["--junit", str(junit), "--markdown", str(md), "--output-json", str(out)]
    assert main([*args, "--candidate", str(bad), *outputs]) == 1
    assert json.loads(out.read_text())["verdict"] == BLOCK
    assert junit.read_text().startswith("<?xml") and "BLOCK" in md.read_text()
    assert main(["gate", "--baseline", str(tmp_path / "missing.json"), "--candidate", str(good)]) == 2
    (tmp_path / "p.yaml").write_text("bogus: 1\n")
    assert main([*args, "--candidate", str(good), "--policy", str(tmp_path / "p.yaml")]) == 2
    new = tmp_path / "new.json"
    assert main(["gate", "--baseline", str(new), "--candidate", str(good), "--update-baseline"]) == 0
    assert json.loads(new.read_text())["kind"] == "ragrig-baseline"
