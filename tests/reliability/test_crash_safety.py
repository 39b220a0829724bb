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
    "before:discover", "after:discover", "before:plan", "after:plan", "before:extract", "after:extract",
    "before:chunk", "after:chunk", "before:embed", "after:embed", "before:index", "index:tables", "index:bm25",
    "index:vectors", "index:chroma", "after:index", "before:publish", "after:publish",
]
CHILD = """
import os, signal, sys
from ragrig.configs.load import load_config
from ragrig.retrieval.ingest.pipeline import IngestPipeline
point, corpus = sys.argv[1], sys.argv[2]
cfg = load_config(overrides=[f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"])
def hook(name):
    if name == point:
        os.kill(os.getpid(), signal.SIGKILL)
IngestPipeline(cfg, hook=hook).run()
"""


def write(corpus: Path, docs: dict[str, str]) -> None:
    for p in corpus.glob("*.md"):
        p.unlink()
    for name, text in docs.items():
        (corpus / name).write_text(text, encoding="utf-8")


OLD = {f"d{i}.md": f"# Doc {i}\n\n## Part A\n\nOld text of document {i} about rule {i}.\n\n## Part B\n\nMore {i}.\n"
       for i in range(4)}
NEW = {**{k: v for k, v in OLD.items() if k != "d3.md"}, "d0.md": OLD["d0.md"].replace("Old", "Changed"),
       "d9.md": "# Doc 9\n\n## Part A\n\nA brand new document.\n"}


def test_sigkill_at_any_stage_never_publishes_a_broken_index(tmp_path, ragrig_home, embedder):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus, OLD)
    cfg = load_config(overrides=[f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"])
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().version == "v000001"
    layout = Layout(cfg)

    rng = random.Random(7)
    points = POINTS + rng.sample(POINTS, 3)  # every point once, plus three repeats: 20 trials
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    versions_seen = set()
    for trial, point in enumerate(points):
        # a reader of the version published before this trial, open while the ingest is killed
        old = Retriever(cfg, embedder=embedder)
        old_ids = [h.chunk_id for h in old.search("rule 2", use_cache=False).hits]
        write(corpus, NEW if trial % 2 == 0 else OLD)  # alternate, so each trial has something to publish
        proc = subprocess.run([sys.executable, "-c", CHILD, point, str(corpus)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == -signal.SIGKILL, (point, proc.stderr[-2000:])
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

