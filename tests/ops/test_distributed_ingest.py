"""Distributed ingest on a real Dask LocalCluster (2 worker processes, shared by this file's tests): the sample
corpus gives the version a local ingest gives; a worker killed mid-embedding is rescheduled and nothing is
embedded twice or lost; a Chroma server killed mid-write and a scheduler that is not there each fail the ingest
with one line and leave the published version as it was."""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
from ragrig.configs.errors import RagrigError
from ragrig.configs.load import load_config
from ragrig.retrieval.executor import Executor
from ragrig.retrieval.index.bm25 import Bm25Index
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline

sys.path.insert(0, str(Path(__file__).parent))
from servers import free_port, server

pytestmark = pytest.mark.slow
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the worker hooks below travel by value
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DOCS = {
    "a.md": "# Alpha\n\n## Move\n\nMove six inches.\n\n## Shoot\n\nRoll dice to shoot.\n\n## Charge\n\nCharge in.\n",
    "b.md": "# Beta\n\n## Cover\n\nCover gives a save.\n\n## Smoke\n\nSmoke blocks sight.\n",
    "c.md": "# Gamma\n\n## Lethal\n\nLethal hits crit.\n\n## Rending\n\nRending upgrades a hit.\n",
}
GRAPH = ("index.vector_search.mode=hnsw", "index.vector_search.hnsw.shards=2")  # its shards built on the workers
QUERIES = ["how far can an operative move", "what does cover do", "smoke grenade", "lethal weapon rule", "charge"]


@pytest.fixture(scope="module")
def cluster(prefect_api):
    """The scheduler address of one LocalCluster of 2 single-threaded worker processes (each restarted by its
    nanny when killed)."""
    from distributed import LocalCluster
    from ragrig.flows.runners import SCHEDULER_HTTP

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1", scheduler_kwargs=SCHEDULER_HTTP) as c:
        yield c.scheduler_address


def settings(home: Path, corpus: Path, *more: str) -> list[str]:
    """The second encoder's view off unless a test turns it on: it is embedded by the driver after the merge,
    the same step whoever ran the partitions, and it is no part of the version the tests compare."""
    return [f"home={home}", f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]",
            "retrieval.fusion.weights.vector2=0", *more]


def dask_ingest(over: list[str], address: str, worker_hook=None) -> dict:
    """The ingest flow's pipeline on the cluster, with a hook the workers call (the flow itself takes none)."""
    from prefect import flow
    from prefect_dask import DaskTaskRunner
    from ragrig.tasks.executor import PrefectTasks

    cfg = load_config(None, over)

    @flow(name="ingest-test", task_runner=DaskTaskRunner(address=address))
    def run() -> dict:
        pipe = IngestPipeline(cfg, progress=False, worker_hook=worker_hook)
        return pipe.run(PrefectTasks(distributed=True)).to_dict()

    return run()


def version_of(over: list[str]) -> IndexVersion:
    return IndexVersion.current(load_config(None, over))


def bm25_rankings(v: IndexVersion, cfg) -> list[list[tuple[str, float]]]:
    bm = Bm25Index.load(v.bm25_dir, cfg.index.bm25)
    ids = [c.chunk_id for c in v.chunks]
    return [[(ids[i], round(s, 5)) for i, s in bm.search(bm.tokenizer(q), 10)] for q in QUERIES]


def assert_same_version(a_over: list[str], b_over: list[str]) -> None:
    a, b = version_of(a_over), version_of(b_over)
    assert [c.to_dict() for c in a.chunks] == [c.to_dict() for c in b.chunks]  # ids, order, text, offsets
    assert [d.to_dict() for d in a.documents()] == [d.to_dict() for d in b.documents()]
    assert a.keywords == b.keywords
    cfg = load_config(None, a_over)
    assert bm25_rankings(a, cfg) == bm25_rankings(b, cfg)
    va, vb = np.asarray(a.vectors), np.asarray(b.vectors)
    assert va.shape == vb.shape and float(np.abs(va - vb).max()) <= 1e-6
    graphs = [{k: v for k, v in x.manifest["files"].items() if k.startswith("vectors.hnsw")} for x in (a, b)]
    assert graphs[0].keys() == graphs[1].keys() and a.manifest["vectors"] == b.manifest["vectors"]
    if va.tobytes() == vb.tobytes():  # the same vectors: the graph's shards, wherever built, the same bytes
        assert graphs[0] == graphs[1]
    leftovers = [p.name for p in (Path(b.layout.versions_dir)).iterdir() if not p.name.startswith("v")]
    assert leftovers == []


@pytest.fixture(scope="module")
def local_sample(tmp_path_factory, sample_part) -> tuple[list[str], object]:
    """The sample's part (tests/sample_part.py) ingested here, in this process, once for the module: the settings
    and the run's stats (the version every cluster ingest of it must equal; read only)."""
    local = settings(tmp_path_factory.mktemp("local") / "home", sample_part[0], *GRAPH)
    return local, IngestPipeline(load_config(None, local), progress=False).run()


def test_a_dask_ingest_of_the_sample_is_the_local_ingest(cluster, local_sample, sample_part, tmp_path):
    from ragrig.flows.ingest import run_ingest

    local, ran = local_sample
    assert {d.format for d in version_of(local).documents()} == {"md", "html", "docx"}
    over = settings(tmp_path / "dask", sample_part[0], "flow.runner=dask",
                    f"flow.address={cluster}", "flow.extract_batch=8", *GRAPH)
    stats = run_ingest(load_config(None, over), None, over, progress=False)  # the flow `ragrig ingest` runs
    assert stats["published"] and stats["version"] == "v000001"
    assert (stats["chunks"], stats["chunks_embedded"], stats["docs_failed"]) == (ran.chunks, ran.chunks_embedded, 0)
    assert stats["seconds"]["workers:embed"] > 0 and "extract" not in stats["seconds"]
    assert version_of(over).manifest["vectors"]["hnsw"]["shards"] == 2  # built by the workers, as Prefect tasks
    assert_same_version(local, over)


def test_the_graph_shards_built_on_the_workers_are_the_bytes_built_here(cluster, tmp_path):
    from distributed import Client
    from ragrig.flows.runners import DaskClient
    from ragrig.retrieval.ingest.build import write_vector_files

    cfg = load_config(None, settings(tmp_path / "home", tmp_path, "index.vector_search.mode=hnsw",
                                     "index.vector_search.hnsw.shard_max_chunks=1000"))
    x = np.random.default_rng(5).normal(size=(2_500, 24)).astype(np.float32)
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    with Client(cluster) as client:
        workers = write_vector_files(cfg, there, x, 24, DaskClient(client))
    assert workers == write_vector_files(cfg, here, x, 24) == {"connectivity": 16, "expansion_add": 128, "shards": 3}
    for name in ("vectors.npy", "vectors.hnsw.000", "vectors.hnsw.001", "vectors.hnsw.002"):
        assert (here / name).read_bytes() == (there / name).read_bytes(), name
    assert sorted(p.name for p in there.iterdir()) == sorted(p.name for p in here.iterdir())  # no temp files


def test_ingest_without_prefect_runs_its_partitions_on_the_cluster_too(cluster, tmp_path, write_files, capsys):
    """`ragrig ingest --no-prefect --runner dask --address …`: the partitions go to the cluster as plain Dask
    tasks (the workers extract, chunk and embed; no Prefect flow), and the version equals the local one. (Three
    small documents, a partition each: the sample's whole path through the cluster is the test above.)"""
    import json

    from ragrig.flows.cli import main

    corpus = write_files(tmp_path / "corpus", DOCS)
    local = settings(tmp_path / "local", corpus, "flow.extract_batch=1", *GRAPH)
    ran = IngestPipeline(load_config(None, local), progress=False).run()
    over = settings(tmp_path / "plain", corpus, "flow.extract_batch=1", *GRAPH,
                    "retrieval.fusion.weights.vector2=1")  # and the view embedded after the merge
    argv = ["ingest", "-q", "--no-prefect", "--runner", "dask", "--address", cluster,
            "--output-json", str(tmp_path / "stats.json")]
    for item in over:
        argv += ["--set", item]
    assert main(argv) == 0
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["published"] and stats["seconds"]["workers:embed"] > 0 and "extract" not in stats["seconds"]
    texts = {c.search_text for c in IndexVersion.current(load_config(None, over)).chunks}
    assert stats["views_embedded"] == {"vector2": len(texts)} and ran.views_embedded == {}
    assert_same_version(local, over)


@dataclass
class KillWorkerOnce:
    """In a worker: write each embedded batch's size to ``log``; at the first batch (``marker`` not there yet)
    SIGKILL this worker process, after the batch is on disk."""

    marker: str
    log: str

    def __call__(self, point: str) -> None:
        if not point.startswith("embedded:"):
            return
        with open(self.log, "a") as fh:
            fh.write(point.split(":")[1] + "\n")
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_embedding_is_retried_and_nothing_is_embedded_twice_or_lost(
        cluster, tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", DOCS)
    small = ["embedding.batch_size=2", "flow.extract_batch=1"]
    local = settings(tmp_path / "local", corpus, *small)
    IngestPipeline(load_config(None, local), progress=False).run()
    over = settings(tmp_path / "dask", corpus, *small)
    hook = KillWorkerOnce(str(tmp_path / "killed"), str(tmp_path / "embedded.log"))
    stats = dask_ingest(over, cluster, hook)
    assert (tmp_path / "killed").exists()  # a worker did die mid-partition
    embedded = [int(n) for n in (tmp_path / "embedded.log").read_text().split()]
    chunks = version_of(over).chunks
    assert stats["published"] and sum(embedded) == len({c.sha256 for c in chunks}) == len(chunks)
    assert_same_version(local, over)


@dataclass
class KillServerAt:
    """In a worker: at ``point``, SIGKILL the process group of the server whose pid is ``pid``."""

    point: str
    pid: int

    def __call__(self, point: str) -> None:
        if point == self.point:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_chroma_server_killed_mid_write_fails_in_one_line_and_keeps_the_published_version(
        cluster, tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", DOCS)
    port = free_port()
    over = settings(tmp_path / "home", corpus, "index.chroma.mode=http", f"index.chroma.port={port}")
    with server([str(BIN / "chroma"), "run", "--host", "127.0.0.1", "--port", str(port), "--path",
                 str(tmp_path / "chroma")], f"http://127.0.0.1:{port}/api/v2/heartbeat", log=tmp_path / "chroma.log"
                ) as proc:
        first = dask_ingest(over, cluster)  # the workers write their vectors to the server
        assert first["version"] == "v000001"
        assert version_of(over).collection().count() == first["chunks"]
        write_files(corpus, {"d.md": "# Delta\n\n## Overwatch\n\nShoot when they move.\n"})
        second = dask_ingest(over, cluster)  # the new document's chunks from a worker, the rest from the driver
        v2 = version_of(over)
        assert second["version"] == "v000002"
        assert sorted(v2.collection().get()["ids"]) == sorted(c.chunk_id for c in v2.chunks)
        write_files(corpus, {"e.md": "# Epsilon\n\n## Guard\n\nGuard an objective.\n"})
        with pytest.raises(RagrigError) as err:
            dask_ingest(over, cluster, KillServerAt("partition:chroma", proc.pid))
    line = str(err.value)
    assert f"Chroma server http://127.0.0.1:{port} failed while a Dask worker wrote" in line and "\n" not in line
    layout = Layout(load_config(None, over))
    assert layout.current_version() == "v000002" and layout.leftovers() == []


def test_a_scheduler_that_is_not_there_fails_in_one_line_and_keeps_the_published_version(
        prefect_api, tmp_path, write_files, capsys):
    from ragrig.flows.cli import main

    corpus = write_files(tmp_path / "corpus", DOCS)
    over = settings(tmp_path / "home", corpus)
    IngestPipeline(load_config(None, over), progress=False).run()
    write_files(corpus, {"d.md": "# Delta\n\n## Overwatch\n\nShoot when they move.\n"})
    gone = f"tcp://127.0.0.1:{free_port()}"
    argv = ["ingest", "-q", "--runner", "dask", "--address", gone]
    for item in [*over, "flow.connect_timeout_s=3"]:
        argv += ["--set", item]
    capsys.readouterr()
    assert main(argv) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"error: flow.address {gone}: no Dask scheduler answers")
    layout = Layout(load_config(None, over))
    assert layout.current_version() == "v000001" and layout.leftovers() == []


@dataclass
class KillAtFirstBatch:
    """In a worker: once the first batch is embedded, SIGKILL the process group of ``pid`` (the scheduler),
    then wait (up to a minute) until the driver has given up and removed the staging folders under ``home``,
    and go on with the partition's next batch, as a worker the scheduler's death did not stop would."""

    pid: int
    home: str

    def __call__(self, point: str) -> None:
        if not point.startswith("embedded:"):
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            return  # a later batch: the scheduler is gone already
        deadline = time.monotonic() + 60
        while list(Path(self.home).glob("indexes/*/versions/.tmp-*")) and time.monotonic() < deadline:
            time.sleep(0.2)


@contextmanager
def own_cluster(tmp_path: Path):
    """A real ``dask scheduler`` and one ``dask worker`` process on 127.0.0.1, each in its own process group:
    (address, the scheduler's process)."""
    from distributed import Client

    port, http = free_port(), free_port()
    address = f"tcp://127.0.0.1:{port}"
    # plain Dask futures pickle the hook by reference (pickle first, cloudpickle only when that fails): the
    # scheduler and the worker import it from this module
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    with server([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                 "--dashboard-address", f"127.0.0.1:{http}"], f"http://127.0.0.1:{http}/health",
                log=tmp_path / "scheduler.log", env=env) as scheduler, \
         server([str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"],
                f"http://127.0.0.1:{http}/health", log=tmp_path / "worker.log", env=env):
        with Client(address, timeout=20) as c:
            c.wait_for_workers(1, timeout=60)
        yield address, scheduler


@pytest.mark.parametrize("path", ["prefect", "plain"])
def test_a_scheduler_killed_mid_ingest_fails_in_one_line_and_keeps_the_published_version(
        prefect_api, tmp_path, write_files, path):
    """The scheduler process is SIGKILLed while a worker embeds the first partition, through the ingest flow
    (Prefect's Dask task runner) and through ``ingest --no-prefect`` (plain Dask futures). The worker, left
    running, must not write the removed staging folder back."""
    from ragrig.flows.runners import cluster_executor

    corpus = write_files(tmp_path / "corpus", DOCS)
    base = settings(tmp_path / "home", corpus, "embedding.batch_size=2", "flow.extract_batch=1")
    IngestPipeline(load_config(None, base), progress=False).run()
    write_files(corpus, {"d.md": "# Delta\n\n## Overwatch\n\nShoot when they move.\n\n## Guard\n\nGuard it.\n\n"
                                 "## Hide\n\nHide in cover.\n\n## Dash\n\nDash three inches.\n"})  # 2+ batches
    with own_cluster(tmp_path) as (address, scheduler):
        over = [*base, "flow.runner=dask", f"flow.address={address}"]
        t0 = time.monotonic()
        hook = KillAtFirstBatch(scheduler.pid, str(tmp_path / "home"))
        with pytest.raises(RagrigError) as err:
            if path == "prefect":
                dask_ingest(over, address, hook)
            else:
                cfg = load_config(None, over)
                with cluster_executor(cfg) as executor:
                    IngestPipeline(cfg, progress=False, worker_hook=hook).run(executor)
        took = time.monotonic() - t0
        time.sleep(3)  # the orphaned worker goes on with its partition meanwhile
    line = str(err.value)
    assert line.startswith(f"the Dask scheduler at {address} cannot be reached or went away (") and "\n" not in line
    assert line.endswith("nothing was published, the published version is unchanged")
    assert took < 90
    layout = Layout(load_config(None, base))
    assert layout.current_version() == "v000001" and layout.leftovers() == []
    assert [p.name for p in layout.versions_dir.iterdir()] == ["v000001"]


class Failing(Executor):
    """A distributed executor whose ``map`` raises ``exc`` before the first result (what a cluster raises)."""

    distributed = True

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def map(self, name, fn, calls):
        yield from ()
        raise self.exc


def test_a_cluster_executor_that_loses_its_scheduler_is_one_line(tmp_path, write_files):
    """The driver's side, whatever runs the partitions: the errors a lost scheduler raises become one line."""
    import concurrent.futures

    gone = Failing(concurrent.futures.CancelledError("run_partition-1 cancelled for reason: "
                                                     "scheduler-connection-lost."))

    corpus = write_files(tmp_path / "corpus", DOCS)
    cfg = load_config(None, settings(tmp_path / "home", corpus, "flow.runner=dask", "flow.address=tcp://10.0.0.9:8786"))
    with pytest.raises(RagrigError, match=r"^the Dask scheduler at tcp://10.0.0.9:8786 cannot be reached or went "
                                          r"away \(CancelledError: run_partition-1 cancelled .*the published "
                                          r"version is unchanged$"):
        IngestPipeline(cfg, progress=False).run(gone)
    assert Layout(cfg).leftovers() == [] and Layout(cfg).current_version() is None

    full_disk = Failing(OSError(28, "No space left on device"))  # a worker's OSError: not a lost scheduler

    with pytest.raises(RagrigError, match=r"^a Dask worker failed on a partition \(OSError: \[Errno 28\] No space "
                                          r"left on device\); nothing was published"):
        IngestPipeline(cfg, progress=False).run(full_disk)
    assert Layout(cfg).leftovers() == [] and Layout(cfg).current_version() is None


def test_the_cancelled_reconnect_traceback_of_dask_client_is_not_printed():
    """After a lost scheduler Dask's client logs its cancelled reconnect as an ERROR with only a traceback;
    the runner drops that record (the user gets the ingest's one line) and nothing else."""
    import asyncio
    import logging

    from ragrig.flows.runners import _quiet_reconnect

    _quiet_reconnect()
    _quiet_reconnect()  # once per process, however many clusters it opens
    log = logging.getLogger("distributed.client")
    assert len(log.filters) == 1

    def record(msg: str, exc: BaseException) -> logging.LogRecord:
        return log.makeRecord(log.name, logging.ERROR, __file__, 1, msg, (), (type(exc), exc, None))

    assert not log.filter(record("", asyncio.CancelledError()))
    assert log.filter(record("", OSError("refused")))  # any other error still shows
    assert log.filter(record("Restarting worker", asyncio.CancelledError()))
