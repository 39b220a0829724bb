"""The test-set lifecycle scenario (docs/testset-lifecycle.md): on a copy of the sample corpus and its test set,
rename a header, edit a section's text, delete a section and move a file, re-ingest, then run
``ragrig testset check`` (and ``--write``), ``ragrig diff`` and, with ``--prefect``, the same through the
deployments (reingest -> the triggered evaluate) on a local Prefect server, keeping its artifacts.

    python benchmarks/testset_lifecycle.py [--work DIR] [--home DIR] [--prefect]

Writes a transcript (every command and its output) and the JSON/Markdown outputs under
``benchmarks/results/testset_lifecycle/``. ``--home`` reuses a ragrig home whose embedding and extraction
caches already hold the sample (the copy's index is new either way: its corpus path differs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import stop_group  # noqa: E402
BIN = Path(sys.executable).parent
OUT = ROOT / "benchmarks" / "results" / "testset_lifecycle"

SILENT = ("### Silent\n\nAn operative can perform the Shoot action with this weapon while it has a Conceal order. "
          "Silent does not change the target's validity; the target must still be a valid target.\n\n")
# (what, file, old text, new text): each old text occurs exactly once
EDITS = [
    ("rename a header", "core/actions.md", "### Dash\n", "### Sprint\n"),
    ("edit a section's text", "core/actions.md", 'its Move characteristic plus 2"', 'its Move characteristic plus 3"'),
    ("delete a section", "weapons/weapon-rules.md", SILENT, ""),
]
MOVES = [("move a file", "core/fighting.md", "rules/fighting.md")]


def apply_edits(corpus: Path) -> list[str]:
    """Edit the copy of the corpus in place; returns one line per edit."""
    done = []
    for what, rel, old, new in EDITS:
        p = corpus / rel
        text = p.read_text(encoding="utf-8")
        assert text.count(old) == 1, (rel, old[:40])
        p.write_text(text.replace(old, new), encoding="utf-8")
        done.append(f"{what}: {rel}: {old.strip()[:60]!r} -> {new.strip()[:60]!r}")
    for what, src, dst in MOVES:
        (corpus / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(corpus / src), str(corpus / dst))
        done.append(f"{what}: {src} -> {dst}")
    return done


class Transcript:
    def __init__(self, env: dict[str, str], sets: list[str]) -> None:
        self.env, self.sets, self.lines = env, sets, []

    def note(self, text: str) -> None:
        print(text)
        self.lines += [text, ""]

    def run(self, *args: str, expect: int | None = 0) -> str:
        cmd = [str(BIN / "ragrig"), *args]
        t0 = time.perf_counter()
        p = subprocess.run([*cmd, *self.sets], env=self.env, capture_output=True, text=True, timeout=1800, cwd=ROOT)
        secs = time.perf_counter() - t0
        out = "\n".join(ln for ln in (p.stdout + p.stderr).splitlines()  # not the progress bars
                        if not ln.lstrip().startswith(("extract:", "embed:", "chunk:"))).rstrip()
        shown = "ragrig " + " ".join(args)
        print(f"$ {shown}  (exit {p.returncode}, {secs:.0f} s)\n{out}\n")
        self.lines += [f"```\n$ {shown}    # exit {p.returncode}, {secs:.0f} s\n{out}\n```", ""]
        if expect is not None and p.returncode != expect:
            raise SystemExit(f"{shown}: exit {p.returncode}, expected {expect}")
        return out


def setup(work: Path) -> tuple[Path, Path]:
    corpus, testset = work / "corpus", work / "sample.yaml"
    shutil.rmtree(corpus, ignore_errors=True)
    shutil.copytree(ROOT / "datasets" / "sample", corpus)
    shutil.copy(ROOT / "datasets" / "testsets" / "sample.yaml", testset)
    return corpus, testset


def cli_scenario(work: Path, home: Path) -> list[str]:
    corpus, testset = setup(work / "cli")
    env = {**os.environ, "RAGRIG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    sets = ["--set", f"corpus.path={corpus}", "--set", f"eval.testsets=[{testset}]", "--set", "index.name=sample-copy"]
    t = Transcript(env, sets)
    t.note("## 1. The CLI: ingest, edit, re-ingest, check, write, diff")
    t.run("ingest", "--no-prefect")
    original = testset.read_text(encoding="utf-8")
    t.note("Edits to the copy of the corpus:\n\n" + "\n".join(f"- {e}" for e in apply_edits(corpus)))
    t.run("ingest", "--no-prefect")
    t.run("testset", "check", "--output-json", str(OUT / "check.json"), "--markdown", str(OUT / "check.md"), expect=1)
    t.run("testset", "check", "--write", expect=1)
    before = work / "cli" / "sample.before.yaml"
    before.write_text(original, encoding="utf-8")
    diff = subprocess.run(["git", "diff", "--no-index", "--no-color", "-U1", str(before), str(testset)],
                          capture_output=True, text=True).stdout
    (OUT / "write.diff").write_text(diff, encoding="utf-8")
    t.note(f"What `--write` changed in the test set (comments and order kept), {diff.count(chr(10))} diff lines; "
           f"the moved expectations' lines:\n\n```diff\n" + "\n".join(
               ln for ln in diff.splitlines() if ln.startswith(("-", "+")) and "fingerprint" not in ln
               and not ln.startswith(("---", "+++"))) + "\n```")
    t.run("testset", "check", expect=1)
    t.run("diff", "--markdown", str(OUT / "diff.md"), "--output-json", str(OUT / "diff.json"))
    return t.lines


async def _flow_state(api: str) -> tuple[dict[str, str], list[tuple[str, str | None, str | None, str]]]:
    from prefect.client.orchestration import PrefectClient

    async with PrefectClient(api) as c:
        deps = {str(d.id): d.name for d in await c.read_deployments()}
        ordered = sorted(await c.read_flow_runs(), key=lambda r: str(r.start_time or r.expected_start_time))
        runs = [(r.name, deps.get(str(r.deployment_id)), r.state.type.value if r.state else None,
                 r.state.message if r.state else "") for r in ordered]
        return deps, runs


async def _artifacts(api: str) -> dict[str, str]:
    from prefect.client.orchestration import PrefectClient

    async with PrefectClient(api) as c:
        arts = sorted((a for a in await c.read_artifacts() if a.key), key=lambda a: a.created)
        return {a.key: str(a.data) for a in arts}  # the newest of each key


def prefect_scenario(work: Path, home: Path) -> list[str]:
    import socket

    corpus, testset = setup(work / "prefect")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(work / "prefect-home"), "PREFECT_API_URL": api,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "RAGRIG_PROJECT_DIR": str(ROOT), "RAGRIG_HOME": str(home),
           "HF_HUB_OFFLINE": "1"}
    shutil.rmtree(work / "prefect-home", ignore_errors=True)  # a fresh Prefect database each time
    (work / "prefect-home").mkdir(parents=True)
    lines = ["## 2. The same through the Prefect deployments (reingest -> triggered evaluate)", ""]
    overrides = [f"corpus.path={corpus}", f"eval.testsets=[{testset}]", "index.name=sample-copy-prefect"]
    server_env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=server_env, stdout=open(work / "server.log", "wb"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    worker = None
    try:
        import urllib.request

        for _ in range(240):
            try:
                with urllib.request.urlopen(f"{api}/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        for args in (["work-pool", "create", "ragrig-process", "--type", "process"],
                     ["--no-prompt", "deploy", "--all"]):
            p = subprocess.run([str(BIN / "prefect"), *args], cwd=ROOT, env=env, capture_output=True, text=True)
            if p.returncode:
                raise SystemExit(f"prefect {' '.join(args)}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", "ragrig-process"], cwd=ROOT,
                                  env=env, stdout=open(work / "worker.log", "wb"), stderr=subprocess.STDOUT,
                                  start_new_session=True)

        def reingest(label: str, evaluations: int) -> None:
            # (not `prefect deployment run --params`: its CLI prints the parameters as rich markup, and a
            # "[/tmp/...]" in them crashes it after the run is created)
            code = ("import json, sys; from prefect.deployments import run_deployment; "
                    "run_deployment('ingest/reingest', parameters=json.loads(sys.argv[1]), timeout=0)")
            p = subprocess.run([sys.executable, "-c", code, json.dumps({"overrides": overrides})], cwd=ROOT, env=env,
                               capture_output=True, text=True)
            if p.returncode:
                raise SystemExit(f"run_deployment: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline:
                _, runs = asyncio.run(_flow_state(api))
                done = [r for r in runs if r[2] in ("COMPLETED", "FAILED", "CRASHED")]
                if sum(r[1] == "evaluate" for r in done) >= evaluations:
                    break
                time.sleep(3)
            _, runs = asyncio.run(_flow_state(api))
            ran = [r for r in runs if r[2] != "SCHEDULED"]  # not the cron schedule's future runs
            lines.append(f"{label}:\n\n" + "\n".join(f"- {dep} run {name}: {state}" + (f" ({msg})" if msg else "")
                                                    for name, dep, state, msg in ran))
            lines.append("")

        reingest("First publish (v000001; nothing before it to compare with)", 1)
        lines.append("Edits:\n\n" + "\n".join(f"- {e}" for e in apply_edits(corpus)) + "\n")
        reingest("Second publish (v000002)", 2)
        arts = asyncio.run(_artifacts(api))
        for key in ("testset-check", "version-diff"):
            (OUT / f"prefect-{key}.md").write_text(arts.get(key, "(missing)"), encoding="utf-8")
            lines += [f"Artifact `{key}`:", "", arts.get(key, "(missing)"), ""]
    finally:
        for proc in (worker, server):
            if proc is not None:
                stop_group(proc)
    print("\n".join(lines))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=None, help="scratch folder (default: a temp dir)")
    ap.add_argument("--home", default=None, help="ragrig home (default: <work>/home)")
    ap.add_argument("--prefect", action="store_true", help="also run the Prefect deployments part")
    ap.add_argument("--prefect-only", action="store_true", help="only the Prefect deployments part")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="ragrig-lifecycle-"))
    home = Path(args.home) if args.home else work / "home"
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ["# Test-set lifecycle scenario (transcript)", "", f"work: {work}", ""]
    if not args.prefect_only:
        lines += cli_scenario(work, home)
        (OUT / "transcript.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {OUT / 'transcript.md'}")
    if args.prefect or args.prefect_only:
        lines = prefect_scenario(work, home)
        (OUT / "transcript-prefect.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {OUT / 'transcript-prefect.md'}")


if __name__ == "__main__":
    main()
