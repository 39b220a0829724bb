"""``ragrig serve`` keeps the cyclic garbage collector off the loaded index (``serve.gc_freeze``, as batch
evaluation does: retrieval/frozen_heap.py), freezes a newly published version once it is swapped in, and lets the
old version's reference cycles be collected instead of keeping them frozen forever."""

from __future__ import annotations

import gc
import weakref

import pytest

pytestmark = pytest.mark.slow

DOCS = {"other.md": "# Other\n\n## Dash\n\nA dash moves three inches.\n"}
QUERY = "which generation is the marker of this corpus"


class Cycle:
    """Data that only the cyclic collector frees (it refers to itself), hung on a version as an index's own
    structures may be."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def live(tmp_path, write_files, make_config, embedder, publish):
    from ragrig.retrieval.search.retriever import Retriever
    from ragrig.retrieval.serve.live import LiveIndex

    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus, "retrieval.max_hops=0", "retrieval.cache_size=0")
    assert publish(cfg, corpus, embedder, 1) == "v000001"
    gc.unfreeze()
    yield LiveIndex(cfg, Retriever(cfg, embedder=embedder)), cfg, corpus
    gc.unfreeze()


def collected(obj: object) -> bool:
    """Whether ``obj`` is in a generation the collector walks (frozen objects are not)."""
    return any(o is obj for o in gc.get_objects())


def test_the_served_index_is_frozen_and_a_swapped_out_versions_cycles_are_collected(live, embedder, publish):
    from fastapi.testclient import TestClient
    from ragrig.retrieval.serve.app import create_app

    live, cfg, corpus = live
    probe = Cycle()
    live.current.retriever.version.probe = probe  # before the server starts: frozen with the version
    gone = weakref.ref(probe)
    del probe
    old_garbage = Cycle()
    gc.collect(1)  # survives into the oldest generation ...
    old_garbage_gone = weakref.ref(old_garbage)
    del old_garbage  # ... then becomes garbage there, as start-up leaves some
    with TestClient(create_app(cfg, live=live, watch=False)) as client:
        assert gc.get_freeze_count() > 0
        assert old_garbage_gone() is None  # collected before the freeze, not frozen for the server's lifetime
        assert not collected(live.current.retriever) and not collected(gone())
        assert publish(cfg, corpus, embedder, 2) == "v000002"
        assert live.check() and live.released == ["v000001"]
        gc.collect()
        # before: the old version's cycle stayed in the frozen generation, out of every collection's reach
        assert gone() is None
        assert not collected(live.current.retriever)  # the new version is frozen in its place
        got = client.post("/retrieve", json={"query": QUERY, "top_k": 1})
        assert got.status_code == 200 and "generation 2" in got.json()["hits"][0]["text"]
    assert gc.get_freeze_count() == 0  # the server stopped: nothing left frozen


def test_gc_freeze_false_freezes_nothing(live, make_config):
    from fastapi.testclient import TestClient
    from ragrig.retrieval.serve.app import create_app

    live, _, corpus = live
    cfg = make_config(corpus, "retrieval.max_hops=0", "retrieval.cache_size=0", "serve.gc_freeze=false")
    with TestClient(create_app(cfg, live=live, watch=False)) as client:
        assert gc.get_freeze_count() == 0 and collected(live.current.retriever)
        assert client.get("/health").status_code == 200
