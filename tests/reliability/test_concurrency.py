"""Concurrency: a second ingest on a locked index exits with a clear message (or waits with --wait);
a reader keeps answering from exactly one version while a new one is published."""

from __future__ import annotations

import threading
import time

import pytest
from ragrig.configs.errors import LockedError
from ragrig.flows.cli import main
from ragrig.retrieval.index.files import ingest_lock
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.search.retriever import Retriever

pytestmark = pytest.mark.slow

DOCS = {
    "a.md": "# A\n\n## One\n\nThe first rule about moving.\n",
    "b.md": "# B\n\n## Two\n\nThe second rule about moving.\n",
}


def sets(corpus) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def test_second_ingest_is_refused_while_the_lock_is_held(tmp_path, write_files, make_config, capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus)
    with ingest_lock(Layout(cfg).lock_file):
        rc = main(["ingest", "--no-prefect", "-q", *sets(corpus)])
        assert rc == 3
        assert "another ingest is running on this index" in capsys.readouterr().err
        with pytest.raises(LockedError):
            IngestPipeline(cfg).run()
    # --wait: the second ingest waits for the first to release the lock, then runs
    release = threading.Event()

    def holder() -> None:
        with ingest_lock(Layout(cfg).lock_file):
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    time.sleep(0.3)
    threading.Timer(1.0, release.set).start()
    assert main(["ingest", "--no-prefect", "-q", "--wait", "30", *sets(corpus)]) == 0
    t.join()


def test_queries_during_a_publish_come_from_one_version(tmp_path, write_files, make_config, embedder):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus)
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    pipe.run()
    reader = Retriever(cfg, embedder=embedder)
    before = [h.chunk_id for h in reader.search("moving", use_cache=False).hits]
    seen: set[str] = set()
    errors: list[BaseException] = []
    stop = threading.Event()

    def query_loop() -> None:
        try:
            while not stop.is_set():
                res = reader.search("moving", use_cache=False)
                seen.add(res.version)
                assert [h.chunk_id for h in res.hits] == before
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    t = threading.Thread(target=query_loop)
    t.start()
    (corpus / "c.md").write_text("# C\n\n## Three\n\nA third rule about moving quickly.\n")
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().version == "v000002"
    stop.set()
    t.join()
    assert not errors, errors
    assert seen == {"v000001"}  # the open reader stays on its version
    fresh = Retriever(cfg, embedder=embedder)
    assert fresh.version.version == "v000002" and any(h.doc_id == "c.md" for h in fresh.search("moving").hits)
