"""Each command's common user errors, run as a user runs them (the installed ``ragrig`` in a subprocess, a fresh
home, no Prefect logging settings of ours): one line on stderr, nothing on stdout, the documented exit code
(2 bad input, 1 run failed, 3 locked), no traceback and no third-party warning; the traceback only under
``--log-level DEBUG``. ``benchmarks/user_errors.py`` renders the same cases as docs/first-contact.md's table.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent / "ragrig"
TINY = {"rules.md": "# Rules\n\n## Moving\n\nMove six inches.\n\n## Cover\n\nCover gives a defence die.\n"}


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # {corpus}, {home}, {tmp}, {port} are filled in
    code: int
    line: str  # a regex the one stderr line must match
    needs_index: bool = False
    env: dict[str, str] = field(default_factory=dict)


CASES = [
    Case("ingest: config file missing", ("ingest", "-c", "{tmp}/nope.yaml"), 2, r"^error: .*nope\.yaml"),
    Case("ingest: corpus folder missing", ("ingest", "--set", "corpus.path={tmp}/no-corpus"), 2,
         r"^error: .*corpus\.path: .*no-corpus does not exist"),
    Case("ingest: a bad value", ("ingest", "--set", "retrieval.top_k=ten"), 2,
         r"^error: .*retrieval\.top_k: .*integer"),
    Case("ingest: the index is locked (inside the flow)", ("ingest", "-q"), 3,
         r"^error: another ingest is running on this index \(pid \d+ .*; wait for it to finish or pass --wait SECONDS$",
         needs_index=True),
    Case("query: before any ingest", ("query", "how do I move?"), 2,
         r"^error: no published index for this config .*; run `ragrig ingest` first$"),
    Case("query: a bad --filter", ("query", "x", "--filter", "colour=red"), 2, r"^error: --filter 'colour=red'"),
    Case("query: the configured server is down", ("query", "x"), 1,
         r"^error: cannot reach the ragrig server at http://127\.0\.0\.1:\d+ ", env={"RAGRIG_SERVER_URL": "{url}"}),
    Case("eval: before any ingest", ("eval",), 2,
         r"^error: no published index for this config .*; run `ragrig ingest` first$"),
    Case("eval: test set missing", ("eval", "-t", "{tmp}/nope.yaml"), 2, r"^error: .*nope\.yaml"),
    Case("eval: an expectation names no document (inside the flow)", ("eval", "-t", "{tmp}/missing-doc.yaml"), 2,
         r"^error: .*case 'a' expect\[0\]: doc 'missing\.md' is not in the index", needs_index=True),
    Case("run: corpus folder missing", ("run", "--set", "corpus.path={tmp}/no-corpus"), 2,
         r"^error: .*corpus\.path: .*no-corpus does not exist"),
    Case("adapt: before any ingest", ("adapt", "-q"), 2,
         r"^error: no published index for this config .*; run `ragrig ingest` first"),
    Case("adapt: a packaged int8 ONNX encoder", ("adapt", "--set", "embedding.model=bge-small-en-v1.5"), 2,
         r"^error: embedding\.model: ragrig adapt fine-tunes a sentence-transformers \(torch\) model; "
         r"'bge-small-en-v1\.5' runs as int8 ONNX by default: set embedding\.backend: torch"),
    Case("adapt: an endpoint encoder", ("adapt", "--set", "embedding.backend=openai"), 2,
         r"^error: embedding\.backend: openai is an endpoint ragrig cannot train; ragrig adapt fine-tunes a "
         r"sentence-transformers \(torch\) model$"),
    Case("adapt: an ONNX folder", ("adapt", "--set", "embedding.model={tmp}/onnx-model"), 2,
         r"^error: embedding\.model: ragrig adapt fine-tunes a sentence-transformers \(torch\) model; "
         r"'.*onnx-model' runs on the onnx backend"),
    Case("adapt: a bad recipe value", ("adapt", "--set", "embedding.adapt.pairs=[header_body, titles]"), 2,
         r"^error: .*embedding\.adapt\.pairs\.1: Input should be 'header_body', 'cloze'"),
    Case("adapt: an unknown recipe key", ("adapt", "--set", "embedding.adapt.epoch=2"), 2,
         r"^error: .*embedding\.adapt\.epoch"),
    Case("sweep: sweep file missing", ("sweep", "{tmp}/nope.yaml"), 2, r"^error: .*nope\.yaml"),
    Case("compare: one run only", ("compare", "{tmp}/a.json"), 2, r"^error: compare needs at least two runs"),
    Case("compare: an unknown run", ("compare", "run-a", "run-b"), 2,
         r"^error: 'run-a' is neither a file nor an MLflow run id or run name"),
    Case("gate: baseline missing", ("gate", "--baseline", "{tmp}/nope.json", "--no-ingest"), 2,
         r"^error: .*nope\.json"),
    Case("import-beir: folder missing", ("import-beir", "{tmp}/no-beir"), 2, r"^error: .*no-beir"),
    Case("validate: folder missing", ("validate", "{tmp}/no-corpus"), 2, r"^error: .*no-corpus does not exist"),
    Case("serve: before any ingest", ("serve",), 2,
         r"^error: no published index for this config .*; run `ragrig ingest` first$"),
    Case("serve: the port is taken", ("serve", "--port", "{port}"), 2,
         r"^error: cannot listen on 127\.0\.0\.1:\d+: Address already in use \(choose another --port / --host\)$"),
]


def user_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment: a fresh home, offline, and none of the test session's Prefect/MLflow settings (its
    machine cache kept: the user's own ~/.cache stays out of tests)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "RAGRIG_", "MLFLOW_")) or k == "RAGRIG_CACHE_DIR"}
    env.update({"RAGRIG_HOME": str(home), "HF_HUB_OFFLINE": "1"})
    env.update(extra or {})
    return env


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def make_world(tmp: Path) -> dict:
    """A corpus and its published index (for the cases that need one), a listening socket (the taken port: close
    ``world["socket"]`` when done), a free port (a server that is down) and the files the cases name."""
    corpus = tmp / "corpus"
    corpus.mkdir()
    for name, text in TINY.items():
        (corpus / name).write_text(text)
    (tmp / "a.json").write_text("{}")
    (tmp / "onnx-model").mkdir()
    (tmp / "onnx-model" / "model.onnx").write_bytes(b"an ONNX-only folder")
    (tmp / "missing-doc.yaml").write_text("name: t\ncases:\n  - id: a\n    query: q\n    expect: [{doc: missing.md}]\n")
    indexed = tmp / "indexed-home"
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    p = run(["ingest", "--no-prefect", "-q", *sets], user_env(indexed), tmp)
    if p.returncode != 0:
        raise RuntimeError(f"could not build the index the cases need: {p.stderr.strip()}")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    return {"tmp": tmp, "corpus": corpus, "indexed": indexed, "sets": sets, "port": taken.getsockname()[1],
            "url": f"http://127.0.0.1:{free}", "socket": taken}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = make_world(tmp_path_factory.mktemp("user-errors"))
    yield w
    w["socket"].close()


def run_case(case: Case, world: dict, home: Path, debug: bool = False) -> subprocess.CompletedProcess[str]:
    fill = {k: str(world[k]) for k in ("tmp", "corpus", "port", "url")}
    args = [a.format(**fill) for a in case.args]
    if case.needs_index:
        home = world["indexed"]
        args += world["sets"]
    env = user_env(home, {k: v.format(**fill) for k, v in case.env.items()})
    pre = ["--log-level", "DEBUG"] if debug else []
    if case.name.startswith("ingest: the index is locked"):
        return _while_locked(pre + args, env, world)
    return run(pre + args, env, world["tmp"])


def _while_locked(args: list[str], env: dict[str, str], world: dict) -> subprocess.CompletedProcess[str]:
    """Hold the index's ingest lock in another process while the command runs."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.layout import Layout

    # the indexed home named in the config, not on os.environ (which would leak into every later test in this
    # process, and the benchmark shares this function)
    sets = [s for s in world["sets"] if s != "--set"] + [f"home={world['indexed']}"]
    lock = Layout(load_config(overrides=sets)).lock_file
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from ragrig.retrieval.index.files import ingest_lock\n"
        f"with ingest_lock(Path({str(lock)!r})):\n    print('held', flush=True); time.sleep(600)")],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        return run(args, env, world["tmp"])
    finally:
        holder.kill()
        holder.wait(timeout=10)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_user_error_is_one_line_and_the_documented_exit_code(case, world, tmp_path):
    p = run_case(case, world, tmp_path / "home")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == case.code, (p.returncode, p.stderr[-3000:])
    assert p.stdout == "" and len(lines) == 1, p.stderr[-3000:]
    assert re.search(case.line, lines[0]), lines[0]
    assert "Traceback" not in p.stderr and "Warning" not in p.stderr


@pytest.mark.parametrize("case", [c for c in CASES if c.name in ("eval: before any ingest", "query: a bad --filter")],
                         ids=lambda c: c.name)
def test_the_traceback_only_under_debug(case, world, tmp_path):
    p = run_case(case, world, tmp_path / "home", debug=True)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == case.code and "Traceback (most recent call last)" in p.stderr
    assert re.search(case.line, lines[-1]), lines[-1]  # the one line still ends it
