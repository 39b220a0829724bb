"""prefect.yaml end to end on a local Prefect server (127.0.0.1): deploy everything, see the reingest cron
schedule, the evaluate trigger and the ragrig-embedding concurrency limit (the build step) registered, run
reingest on a process worker, and see the evaluate run that the publish event triggers complete, with the
version it was given and its test-set check artifact."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from servers import free_port, server, stop_group  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LEAN = ["retrieval.fusion.weights.vector2=0", "eval.ragas=false"]
# The corpus the deployed runs ingest and evaluate: three small Markdown files and a test set of their own. The
# subject here is the deployment machinery (schedule, worker, event, trigger, parameters); the sample's formats
# and docling go through ingest in tests/flows/ and on a cluster in test_distributed_ingest.py. (With part of the
# sample, the reingest run cost ~18 s of 2 cores, docling's import and its conversions in the run's process.)
DOCS = {
    "move.md": "# Movement\n\n## Dash\n\nA dash moves an operative three inches.\n\n"
               "## Climb\n\nClimbing costs one inch per inch climbed.\n",
    "shoot.md": "# Shooting\n\n## Cover\n\nA target in cover retains one normal save.\n\n"
                "## Obscured\n\nAn obscured target cannot be shot beyond six inches.\n",
    "teams.md": "# Teams\n\n## Ashen Choir\n\nThe choir sings its dead back onto the field.\n",
}
TESTSET = """name: deployed
cases:
  - id: dash
    query: how far does a dash move
    expect: [{doc: move.md, section: Dash}]
  - id: cover
    query: what does cover give the target
    expect: [{doc: shoot.md, section: Cover}]
  - id: choir
    query: which team sings its dead back
    expect: [{doc: teams.md}]
"""


async def _state(api: str) -> tuple[dict, list]:
    from prefect.client.orchestration import PrefectClient

    async with PrefectClient(api) as c:
        deployments = {}
        for d in await c.read_deployments():
            deployments[d.name] = (d, [s.schedule for s in await c.read_deployment_schedules(d.id)])
        runs = [(r.name, r.deployment_id, r.state.type.value if r.state else None, r.id)
                for r in await c.read_flow_runs()]
        return deployments, runs


async def _limit(api: str, tag: str) -> int:
    from prefect.client.orchestration import PrefectClient

    async with PrefectClient(api) as c:
        return int((await c.read_concurrency_limit_by_tag(tag)).concurrency_limit)


async def _evaluate_runs_and_artifacts(api: str) -> tuple[list[dict], dict[str, str]]:
    from prefect.client.orchestration import PrefectClient

    async with PrefectClient(api) as c:
        runs = [r.parameters for r in await c.read_flow_runs() if r.parameters.get("version")]
        return runs, {a.key: str(a.data) for a in await c.read_artifacts() if a.key}


def test_deploy_schedule_run_and_event_triggered_evaluation(tmp_path, write_files):
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": api,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "RAGRIG_PROJECT_DIR": str(ROOT),
           "RAGRIG_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "PREFECT_LOGGING_LEVEL": "INFO",
           # the worker asks for scheduled runs every second, not every 10 s (the triggered run waited for it)
           "PREFECT_WORKER_QUERY_SECONDS": "1"}
    (tmp_path / "prefect").mkdir()
    server_env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    with server([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                f"{api}/health", timeout_s=120, log=tmp_path / "server.log", env=server_env):

        def cli(*args: str) -> str:
            p = subprocess.run([str(BIN / "prefect"), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=180)
            assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
            return p.stdout

        cli("work-pool", "create", "ragrig-process", "--type", "process")
        cli("--no-prompt", "deploy", "--all")
        deployments, _ = asyncio.run(_state(api))
        assert set(deployments) == {"reingest", "evaluate", "sweep"}
        assert asyncio.run(_limit(api, "ragrig-embedding")) == 1  # created by the deploy's build step
        assert deployments["sweep"][1] == []  # on demand only
        assert [s.cron for s in deployments["reingest"][1]] == ["0 3 * * *"]

        worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", "ragrig-process"], cwd=ROOT,
                                  env=env, stdout=open(tmp_path / "worker.log", "wb"), stderr=subprocess.STDOUT,
                                  start_new_session=True)
        try:
            # the deployment's own parameters, with the parts of the default's work this test does not need: the
            # second encoder's embedding of every chunk, ragas, and the sample (DOCS and TESTSET above; the event
            # carries them on to evaluate)
            corpus = write_files(tmp_path / "corpus", DOCS)
            testset = tmp_path / "deployed.yaml"
            testset.write_text(TESTSET)
            # (the list's path quoted: `prefect deployment run` echoes the parameter through rich, which takes
            # "[/tmp…" for a closing markup tag and fails)
            lean = [*LEAN, f"corpus.path={corpus}", f"eval.testsets={json.dumps([str(testset)])}"]
            cli("deployment", "run", "ingest/reingest", "--param", f"overrides={json.dumps(lean)}")
            ids = {d.id: name for name, (d, _) in deployments.items()}
            deadline = time.monotonic() + 300
            done: dict[str, str] = {}
            while time.monotonic() < deadline:
                _, runs = asyncio.run(_state(api))
                done = {ids.get(dep): state for _, dep, state, _ in runs if state in ("COMPLETED", "FAILED", "CRASHED")}
                if {"reingest", "evaluate"} <= set(done) or "FAILED" in done.values() or "CRASHED" in done.values():
                    break
                time.sleep(1)
            log = (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
            assert done.get("reingest") == "COMPLETED", log
            assert done.get("evaluate") == "COMPLETED", log  # triggered by ragrig.index.published
            params, artifacts = asyncio.run(_evaluate_runs_and_artifacts(api))
            assert [p["version"] for p in params] == ["v000001"]  # the event's version reached the flow
            assert [p["overrides"] for p in params] == [lean]  # and so did the run's overrides
            # the first version has nothing before it: checked (every case ok) and evaluated, no diff, no gate
            assert "### Test set check: deployed on v000001" in artifacts["testset-check"]
            assert "3 ok, 0 moved, 0 changed, 0 gone" in artifacts["testset-check"]
            assert "eval-deployed" in artifacts and "version-diff" not in artifacts
        finally:
            stop_group(worker, grace_s=20)
    assert (tmp_path / "home" / "mlflow" / "mlflow.db").exists()  # the triggered evaluation logged its run
