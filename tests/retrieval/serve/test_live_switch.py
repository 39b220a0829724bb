"""Switching to a newly published version without dropping a request: a request keeps the version it started
on, new requests get the new one, the old one is let go when its last request ends; and the same under load,
through a real server on 127.0.0.1, with the version published by an ingest mid-run."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

DOCS = {"other.md": "# Other\n\n## Dash\n\nA dash moves three inches.\n\n## Cover\n\nCover gives a defence die.\n"}
QUERY = "which generation is the marker of this corpus"


@pytest.fixture
def corpus_cfg(tmp_path, write_files, make_config, embedder, publish):
    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = make_config(corpus, "retrieval.max_hops=0", "retrieval.cache_size=0")
    assert publish(cfg, corpus, embedder, 1) == "v000001"
    return cfg, corpus


def texts(cfg, version: str) -> dict[str, str]:
    from ragrig.retrieval.index.layout import Layout
    from ragrig.retrieval.index.version import IndexVersion

    return {c.chunk_id: c.text for c in IndexVersion(cfg, Layout(cfg), version).chunks}


def test_a_request_keeps_its_version_and_new_ones_get_the_new_one(corpus_cfg, embedder, publish):
    from ragrig.retrieval.search.retriever import Retriever
    from ragrig.retrieval.serve.live import LiveIndex

    cfg, corpus = corpus_cfg
    live = LiveIndex(cfg, Retriever(cfg, embedder=embedder))
    seen = []
    live.listen(lambda old, new: seen.append((old.version, new.version)))
    assert live.check() is False  # nothing new
    with live.acquire() as held:  # a request in flight on v1 ...
        assert publish(cfg, corpus, embedder, 2) == "v000002"
        assert live.check() is True and seen == [("v000001", "v000002")]
        assert live.current.version == "v000002" and live.switches == 1
        with live.acquire() as fresh:  # ... while a new one gets v2
            assert fresh.version.version == "v000002"
            assert "generation 2" in fresh.search(QUERY, top_k=1).hits[0].text
        hit = held.search(QUERY, top_k=1).hits[0]  # the old version still answers, whole
        assert held.version.version == "v000001" and "generation 1" in hit.text
        assert live.released == []  # not let go while a request holds it
    assert live.released == ["v000001"]
    assert live.check() is False
    with live.acquire() as r:
        assert r.search(QUERY, top_k=1).hits[0].text == texts(cfg, "v000002")[r.search(QUERY, top_k=1).hits[0].chunk_id]


def test_a_version_that_cannot_be_opened_keeps_the_old_one(corpus_cfg, embedder, caplog):
    from ragrig.retrieval.index.layout import Layout
    from ragrig.retrieval.search.retriever import Retriever
    from ragrig.retrieval.serve.live import LiveIndex

    cfg, _ = corpus_cfg
    live = LiveIndex(cfg, Retriever(cfg, embedder=embedder))
    layout = Layout(cfg)
    (layout.versions_dir / "v000007").mkdir()  # no manifest: not a complete version
    layout.current_file.write_text("v000007\n")
    with caplog.at_level("WARNING", logger="ragrig.retrieval.serve.live"):
        assert live.check() is False and live.check() is False
    assert live.current.version == "v000001"
    assert [r.getMessage() for r in caplog.records].count(
        f"cannot open index version v000007 yet (IndexNotFoundError: index version v000007 at "
        f"{layout.version_dir('v000007')} is incomplete (no manifest)); still serving v000001") == 1  # once


@pytest.mark.slow
def test_publishing_mid_run_under_load_drops_nothing_and_mixes_nothing(corpus_cfg, embedder, publish):
    """8 clients on a real server (127.0.0.1, uvicorn in a thread, polling CURRENT every 0.1 s) while an ingest
    publishes v2: every request answered 200, each answer's hits are exactly chunks of the version it names,
    and a client that has seen v2 never sees v1 again."""
    import uvicorn
    from ragrig.retrieval.search.retriever import Retriever
    from ragrig.retrieval.serve.app import create_app
    from ragrig.retrieval.serve.live import LiveIndex

    cfg, corpus = corpus_cfg
    cfg.serve.poll_s = 0.1
    live = LiveIndex(cfg, Retriever(cfg, embedder=embedder))
    app = create_app(cfg, live=live)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    answers: list[list[tuple[str, list[tuple[str, str]]]]] = [[] for _ in range(8)]
    errors: list[str] = []
    stop = threading.Event()

    def client(i: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as c:
            for _ in range(400):  # bounded
                if stop.is_set():
                    return
                try:
                    r = c.post("/retrieve", json={"query": QUERY, "top_k": 3})
                    if r.status_code != 200:
                        errors.append(f"{r.status_code} {r.text[:200]}")
                        continue
                    body = r.json()
                    answers[i].append((body["version"], [(h["chunk_id"], h["text"]) for h in body["hits"]]))
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))

    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        clients = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in clients:
            t.start()
        while sum(map(len, answers)) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert publish(cfg, corpus, embedder, 2) == "v000002"  # in this process, beside the server
        while not any(v == "v000002" for a in answers for v, _ in a[-3:]) and time.monotonic() < deadline:
            time.sleep(0.05)
        after = sum(map(len, answers))
        while sum(map(len, answers)) < after + 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for t in clients:
            t.join(timeout=30)
    finally:
        stop.set()
        server.should_exit = True
        thread.join(timeout=30)
    assert errors == []
    tables = {v: texts(cfg, v) for v in ("v000001", "v000002")}
    mixed = [(v, hits) for a in answers for v, hits in a if any(tables[v].get(cid) != text for cid, text in hits)]
    assert mixed == []
    for a in answers:
        versions = [v for v, _ in a]
        assert versions == sorted(versions)  # monotonic: never back to v1 once v2 was seen
    seen = [v for a in answers for v, _ in a]
    assert seen.count("v000001") >= 40 and seen.count("v000002") >= 20, (seen.count("v000001"), seen.count("v000002"))
    assert all(("generation 2" in hits[0][1]) == (v == "v000002") for a in answers for v, hits in a)
    assert live.released == ["v000001"] and live.switches == 1
