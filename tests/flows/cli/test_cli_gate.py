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


def test_a_partial_candidate_blocks_and_says_so_on_the_console(tmp_path, capsys):
    """Issue 19, item 6: 5 of the baseline's 100 cases under the same test-set name used to PASS."""
    base, part = tmp_path / "base.json", tmp_path / "part.json"
    base.write_text(json.dumps(baseline_payload([{**run([0.8] * 100), "per_tag": {}, "overall": {}}])))
    part.write_text(json.dumps({**run([0.8] * 100), "per_query": run([0.8] * 100)["per_query"][:5]}))
    md = tmp_path / "g.md"
    assert main(["gate", "--baseline", str(base), "--candidate", str(part), "--markdown", str(md)]) == 1
    out = capsys.readouterr().out
    assert "BLOCK: coverage: compared on 5 of the baseline's 100 cases: 95 left out" in out
    assert "verdict: BLOCK" in out and "Partial comparison" in md.read_text()
    policy = tmp_path / "p.yaml"
    policy.write_text("allow_subset: true\n")
    assert main(["gate", "--baseline", str(base), "--candidate", str(part), "--policy", str(policy)]) == 0
    assert "WARN: coverage" in capsys.readouterr().out


CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as a full disk does
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
from ragrig.flows.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_update_baseline_on_a_full_disk_keeps_the_old_baseline_whole(tmp_path):
    """Issue 19, item 7: with no room for the new baseline, the old one used to be cut to 64 KB ("not JSON"
    at the next gate). The write is temp + fsync + rename: the old file stays whole, and the error is one line."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    old = json.dumps(baseline_payload([{**run([0.8] * 50), "per_tag": {}, "overall": {}}]))
    base.write_text(old)
    cand.write_text(json.dumps(run([0.7] * 1500)))  # its baseline: ~300 KB, more than the 64 KB allowed
    proc = subprocess.run([sys.executable, "-c", CHILD, "gate", "--baseline", str(base), "--candidate", str(cand),
                           "--update-baseline"], capture_output=True, text=True, timeout=120, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.strip().startswith(f"error: cannot write {base}:") and "unchanged" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert base.read_text() == old and not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # no temp left
    assert main(["gate", "--baseline", str(base), "--candidate", str(cand), "--set", "mlflow.enabled=false"]) in (0, 1)
