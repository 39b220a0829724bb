"""The composite GitHub Action (action.yml) and the example workflow that uses it. The action's steps run here as
a runner would run them (bash, inputs through env, GITHUB_ENV / GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files),
with ``install: none`` (this venv's ragrig) and a candidate report, so no index is needed: PASS, BLOCK (the step
fails unless fail-on-block is false) and a missing baseline (exit 2)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ragrig.eval.gate import baseline_payload

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "retrieval-gate.yml").read_text())


def _expand(text: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
    def value(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr == "github.action_path":
            return str(ROOT)
        sid, _, out = expr.removeprefix("steps.").partition(".outputs.")
        return steps.get(sid, {}).get(out, "")

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def run_action(with_: dict[str, str], workspace: Path) -> tuple[int, dict[str, str], str]:
    """Run action.yml's steps like a runner: returns the exit code, the action's outputs and the step summary."""
    unknown = set(with_) - set(ACTION["inputs"])
    assert not unknown, unknown
    inputs = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    inputs.update(with_)
    missing = [k for k, v in ACTION["inputs"].items() if v.get("required") and not inputs[k]]
    assert not missing, missing
    files = {name: workspace / f".{name.lower()}" for name in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
    for f in files.values():
        f.write_text("")
    base_env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                "RUNNER_TEMP": str(workspace / "tmp"), "GITHUB_ACTION_PATH": str(ROOT),
                **{k: str(v) for k, v in files.items()}}
    steps: dict[str, dict[str, str]] = {}
    code = 0
    for step in ACTION["runs"]["steps"]:
        assert step["shell"] == "bash" and "uses" not in step
        env = dict(base_env)
        env.update(line.split("=", 1) for line in files["GITHUB_ENV"].read_text().splitlines() if "=" in line)
        env.update({k: _expand(str(v), inputs, steps) for k, v in step.get("env", {}).items()})
        assert "${{" not in step["run"], "inputs must reach the script through env"
        files["GITHUB_OUTPUT"].write_text("")
        p = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workspace, env=env, capture_output=True, text=True,
                           timeout=300)
        steps[step.get("id", "")] = dict(line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines()
                                         if "=" in line)
        code = p.returncode
        if code != 0:
            print(p.stdout[-2000:], p.stderr[-2000:])
            break
    outputs = {k: _expand(v["value"], inputs, steps) for k, v in ACTION["outputs"].items()}
    return code, outputs, files["GITHUB_STEP_SUMMARY"].read_text()


@pytest.fixture
def workspace(tmp_path, make_report):
    (tmp_path / "tmp").mkdir()
    good = make_report(testset="tiny").to_dict()
    (tmp_path / "baseline.json").write_text(json.dumps(baseline_payload([good])))
    (tmp_path / "good.json").write_text(json.dumps(good))
    bad = make_report(testset="tiny").to_dict()
    bad["per_query"][0]["metrics"] = {k: 0.0 for k in bad["per_query"][0]["metrics"]}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "policy.yaml").write_text("must_pass: [q1]\n")
    return tmp_path


def test_a_passing_candidate(workspace):
    code, out, summary = run_action({"baseline": "baseline.json", "candidate": "good.json", "install": "none",
                                     "policy": "policy.yaml"}, workspace)
    assert code == 0 and out["verdict"] == "PASS"
    assert out["junit"] == "ragrig-gate/junit.xml" and out["report-dir"] == "ragrig-gate"
    for key in ("junit", "markdown", "json"):
        assert (workspace / out[key]).is_file(), key
    assert summary == (workspace / out["markdown"]).read_text() and "PASS" in summary
    assert json.loads((workspace / out["json"]).read_text())["verdict"] == "PASS"


def test_a_blocking_candidate_fails_the_step_unless_told_not_to(workspace):
    with_ = {"baseline": "baseline.json", "candidate": "bad.json", "install": "none", "policy": "policy.yaml",
             "output-dir": "reports"}
    code, out, summary = run_action(with_, workspace)
    assert code == 1 and out["verdict"] == "BLOCK" and "BLOCK" in summary
    assert "testcase" in (workspace / "reports" / "junit.xml").read_text()
    code, out, _ = run_action({**with_, "fail-on-block": "false"}, workspace)
    assert code == 0 and out["verdict"] == "BLOCK"


def test_bad_input_fails_the_step_with_the_gates_exit_code(workspace):
    code, out, summary = run_action({"baseline": "nope.json", "candidate": "good.json", "install": "none"}, workspace)
    assert code == 2 and out["verdict"] == "" and summary == ""


def test_the_example_workflow_uses_the_action_with_inputs_it_has():
    steps = WORKFLOW["jobs"]["gate"]["steps"]
    gate = next(s for s in steps if s.get("uses") == "./")
    assert gate["id"] == "gate" and set(gate["with"]) <= set(ACTION["inputs"])
    assert gate["with"]["baseline"] == "datasets/baselines/sample.json" and (ROOT / gate["with"]["baseline"]).is_file()
    assert (ROOT / gate["with"]["policy"]).is_file()
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["with"]["path"].rstrip("/") == gate["with"]["output-dir"]
