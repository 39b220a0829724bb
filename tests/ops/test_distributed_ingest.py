"""Distributed ingest on a real Dask LocalCluster (2 worker processes, shared by this file's tests): the sample
corpus gives the version a local ingest gives; a worker killed mid-embedding is rescheduled and nothing is
embedded twice or lost; a Chroma server killed mid-write and a scheduler that is not there each fail the ingest
with one line and leave the published version as it was."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
from ragrig.configs.errors import RagrigError
from ragrig.configs.load import load_config
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
QUERIES = ["how far can an operative move", "what does cover do", "smoke grenade", "lethal weapon rule", "charge"]


@pytest.fixture(scope="module")
def cluster(prefect_api):
    """The scheduler address of one LocalCluster of 2 single-threaded worker processes (each restarted by its
    nanny when killed)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as c:
        yield c.scheduler_address


def settings(home: Path, corpus: Path, *more: str) -> list[str]:
    return [f"home={home}", f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]", *more]


def dask_ingest(over: list[str], address: str, worker_hook=None) -> dict:
    """The ingest flow's pipeline on the cluster, with a hook the workers call (the flow itself takes none)."""
    from prefect import flow
    from prefect_dask import DaskTaskRunner
    from ragrig.tasks.ingest import map_extract, map_partitions
    from ragrig.tasks.stages import run_stage

    cfg = load_config(None, over)

    @flow(name="ingest-test", task_runner=DaskTaskRunner(address=address))
    def run() -> dict:
        pipe = IngestPipeline(cfg, progress=False, worker_hook=worker_hook)
        return pipe.run(stage=run_stage, mapper=map_extract, partitions=map_partitions).to_dict()

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
    leftovers = [p.name for p in (Path(b.layout.versions_dir)).iterdir() if not p.name.startswith("v")]
    assert leftovers == []


def test_a_dask_ingest_of_the_sample_is_the_local_ingest(cluster, tmp_path):
    from ragrig.flows.ingest import run_ingest

    local = settings(tmp_path / "local", ROOT / "datasets" / "sample")
    ran = IngestPipeline(load_config(None, local), progress=False).run()
    over = settings(tmp_path / "dask", ROOT / "datasets" / "sample", "flow.runner=dask",
                    f"flow.address={cluster}", "flow.extract_batch=8")
    stats = run_ingest(load_config(None, over), None, over, progress=False)  # the flow `ragrig ingest` runs
    assert stats["published"] and stats["version"] == "v000001"
    assert (stats["chunks"], stats["chunks_embedded"], stats["docs_failed"]) == (ran.chunks, ran.chunks_embedded, 0)
    assert stats["seconds"]["workers:embed"] > 0 and "extract" not in stats["seconds"]
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


def test_a_scheduler_that_goes_away_mid_ingest_is_one_line(tmp_path, monkeypatch):
    """The driver's side of a scheduler lost while the partitions run (the flows check the address before)."""
    from ragrig.tasks import ingest as tasks_ingest

    class Gone:
        def map(self, *args, **kwargs):
            raise OSError("Timed out trying to connect to tcp://10.0.0.9:8786 after 3 s")

    cfg = load_config(None, settings(tmp_path / "home", tmp_path, "flow.runner=dask", "flow.address=tcp://10.0.0.9:8786"))
    monkeypatch.setattr(tasks_ingest, "partition_task", Gone())
    with pytest.raises(RagrigError, match=r"^the Dask scheduler at tcp://10.0.0.9:8786 cannot be reached or went "
                                          r"away \(OSError: Timed out .*the published version is unchanged$"):
        list(tasks_ingest.map_partitions(cfg, [object()]))
