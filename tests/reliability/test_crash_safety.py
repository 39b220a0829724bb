"""Crash safety: an ingest SIGKILLed at points across its stages leaves the published index either the
old or the new version, complete and consistent (chunks table = manifest = BM25 = Chroma, no duplicates);
the old version keeps answering queries meanwhile; the next ingest finishes the job."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ragrig.configs.load import load_config
from ragrig.retrieval.index.health import check_index
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.retriever import Retriever

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

# every instrumentation point the pipeline calls its hook at, in order
POINTS = [
    "before:discover", "after:discover", "before:plan", "after:plan", "before:partitions", "after:partitions",
    "before:embed", "after:embed", "before:vectors", "after:vectors", "before:index", "index:tables", "index:bm25",
    "index:reader", "index:vectors", "index:chroma", "after:index", "before:publish", "after:publish",
]
# The ingests to kill are forked from one process that imported the pipeline's libraries once (torch,
# sentence-transformers, Chroma, bm25s: ~4 s of 2 cores per cold interpreter, 20 times). Each forked ingest loads
# its own model and runs until SIGKILL, as a fresh process would: what is on disk afterwards is the same. The
# parent never runs a model (torch's thread pools are not fork-safe once used).
FORK_SERVER = """
import os, signal, sys
from ragrig.configs.load import load_config
from ragrig.retrieval.ingest.pipeline import IngestPipeline
import chromadb, bm25s, sentence_transformers, transformers  # noqa: F401  imported once, before the forks
print("ready", flush=True)
for line in sys.stdin:
    point, corpus, err = line.rstrip("\\n").split("\\t")
    pid = os.fork()
    if pid == 0:
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            cfg = load_config(overrides=[f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"])
            def hook(name):
                if name == point:
                    os.kill(os.getpid(), signal.SIGKILL)
            IngestPipeline(cfg, hook=hook).run()
        except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""


class ForkServer:
    """``run(point, corpus)`` -> (the forked ingest's exit code, negative for a signal; its stdout and stderr)."""

    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.tmp = tmp
        self.proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER], env=env, cwd=ROOT, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        self.n = 0

    def run(self, point: str, corpus: Path) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.n += 1
        err = self.tmp / f"ingest-{self.n}.log"
        self.proc.stdin.write(f"{point}\t{corpus}\t{err}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the fork server exited with {self.proc.wait()}"
        return int(line), err.read_text(errors="replace") if err.exists() else ""

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def write(corpus: Path, docs: dict[str, str]) -> None:
    for p in corpus.glob("*.md"):
        p.unlink()
    for name, text in docs.items():
        (corpus / name).write_text(text, encoding="utf-8")


OLD = {f"d{i}.md": f"# Doc {i}\n\n## Part A\n\nOld text of document {i} about rule {i}.\n\n## Part B\n\nMore {i}.\n"
       for i in range(4)}
NEW = {**{k: v for k, v in OLD.items() if k != "d3.md"}, "d0.md": OLD["d0.md"].replace("Old", "Changed"),
       "d9.md": "# Doc 9\n\n## Part A\n\nA brand new document.\n"}


def test_sigkill_at_any_stage_never_publishes_a_broken_index(tmp_path, ragrig_home, embedder, request):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus, OLD)
    cfg = load_config(overrides=[f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"])
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().version == "v000001"
    layout = Layout(cfg)

    rng = random.Random(7)
    points = POINTS + rng.sample(POINTS, 3)  # every point once, plus three repeats: 21 trials
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    versions_seen = set()
    forks = ForkServer(env, tmp_path)
    request.addfinalizer(forks.close)
    for trial, point in enumerate(points):
        # a reader of the version published before this trial, open while the ingest is killed
        old = Retriever(cfg, embedder=embedder)
        old_ids = [h.chunk_id for h in old.search("rule 2", use_cache=False).hits]
        write(corpus, NEW if trial % 2 == 0 else OLD)  # alternate, so each trial has something to publish
        returncode, stderr = forks.run(point, corpus)
        assert returncode == -signal.SIGKILL, (point, stderr[-2000:])
        health = check_index(cfg, all_versions=True)
        assert health.current is not None, point
        assert health.ok, (point, [(v.version, v.problems) for v in health.versions])
        versions_seen.add(health.current)
        # the old reader still answers, from its own version
        try:
            answered = [h.chunk_id for h in old.search("rule 2", use_cache=False).hits]
        except Exception as exc:
            raise AssertionError(f"trial {trial} ({point}): the old version stopped answering: {exc}") from exc
        assert answered == old_ids, point
        # the next ingest (not killed) completes and leaves a consistent current version
        pipe = IngestPipeline(cfg)
        pipe.embedder = embedder
        pipe.run()
        health = check_index(cfg, all_versions=True)
        assert health.ok and health.leftovers == [], (point, health.leftovers)
        table = (layout.version_dir(health.current) / "chunks.jsonl").read_text().splitlines()
        current_ids = {json.loads(line)["chunk_id"] for line in table}
        expected_docs = set(NEW if trial % 2 == 0 else OLD)
        assert {i.split("#")[0] for i in current_ids} == expected_docs, point
    assert len(versions_seen) > 1  # some kills landed before the switch, some after

