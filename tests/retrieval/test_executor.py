"""The one executor interface (``retrieval/executor.py``): the library's sequences ask it for ``call`` and ``map``
only, so one sequence runs unchanged under every executor. Here: the in-process executor's semantics, and a whole
ingest under a recording executor and under a distributed one that runs its "workers" in this process."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.load import load_config
from ragrig.retrieval.executor import IN_PROCESS, Executor
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest.pipeline import IngestPipeline

DOCS = {
    "a.md": "# Alpha\n\n## Move\n\nMove six inches.\n\n## Shoot\n\nRoll dice to shoot.\n\n## Charge\n\nCharge in.\n",
    "b.md": "# Beta\n\n## Cover\n\nCover gives a save.\n\n## Smoke\n\nSmoke blocks sight.\n",
    "c.md": "# Gamma\n\n## Lethal\n\nLethal hits crit.\n\n## Rending\n\nRending upgrades a hit.\n",
}
DOCS["d.md"] = DOCS["a.md"]  # the same texts in another partition: embedded once, counted once


def test_in_process_calls_and_maps_in_order_here():
    assert IN_PROCESS.call("double", lambda x, y: x * y, 6, 7) == 42
    assert list(IN_PROCESS.map("pow", pow, [(2, 3), (3, 2), (10, 0)])) == [8, 9, 1]
    assert list(IN_PROCESS.map("none", pow, [])) == []
    assert IN_PROCESS.distributed is False


def test_in_process_map_runs_a_call_only_when_its_result_is_taken():
    """A failed call stops the map there: the calls after it never run (the cluster's executor cancels them)."""
    ran: list[int] = []

    def step(i: int) -> int:
        ran.append(i)
        if i == 1:
            raise ValueError("boom")
        return i

    results = IN_PROCESS.map("step", step, [(0,), (1,), (2,)])
    assert ran == [] and next(results) == 0
    with pytest.raises(ValueError, match="boom"):
        next(results)
    assert ran == [0, 1]


class Recording(Executor):
    """In this process, recording every step and map by name (``distributed``: as a cluster executor is)."""

    def __init__(self, distributed: bool = False) -> None:
        self.distributed = distributed
        self.steps: list[str] = []
        self.maps: list[tuple[str, str, int]] = []

    def call(self, name, fn, *args):
        self.steps.append(name)
        return fn(*args)

    def map(self, name, fn, calls):
        self.maps.append((name, fn.__name__, len(calls)))
        yield from super().map(name, fn, calls)


def _settings(home, corpus, *more: str) -> list[str]:
    return [f"home={home}", f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]",
            "flow.extract_batch=2", *more]


@pytest.mark.slow
def test_one_ingest_sequence_under_a_local_and_a_distributed_executor_writes_the_same_version(tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", DOCS)
    local, dist = Recording(), Recording(distributed=True)
    a = load_config(None, _settings(tmp_path / "local", corpus))
    b = load_config(None, _settings(tmp_path / "dist", corpus))
    sa = IngestPipeline(a, progress=False).run(local)
    sb = IngestPipeline(b, progress=False).run(dist)
    # the sequence is the pipeline's, whoever runs it: every step by name, the batches through map
    # one sequence: the same steps, and the partitions (4 documents in batches of 2) mapped; only what a partition
    # does differs: extract and chunk here (the driver embeds), extract, chunk and embed on a distributed executor
    assert local.steps == dist.steps == ["sweep-leftovers", "verify-current", "discover", "plan", "embed",
                                         "build-index", "publish"]
    assert local.maps == [("partition", "chunk_partition", 2)]
    assert dist.maps == [("partition", "run_partition", 2)]
    assert (sa.chunks, sa.chunks_embedded, sa.chunks_cached, sa.published) == (
        sb.chunks, sb.chunks_embedded, sb.chunks_cached, True)
    assert sa.chunks_embedded == len({c.sha256 for c in IndexVersion.current(a).chunks}) < sa.chunks
    va, vb = IndexVersion.current(a), IndexVersion.current(b)
    assert [c.to_dict() for c in va.chunks] == [c.to_dict() for c in vb.chunks]
    assert [d.to_dict() for d in va.documents()] == [d.to_dict() for d in vb.documents()]
    # each partition embeds its own chunks, so the encoder's batches differ: the same vectors to the last bits
    # (what a Dask ingest gives too: tests/ops/test_distributed_ingest.py)
    assert float(np.abs(np.asarray(va.vectors) - np.asarray(vb.vectors)).max()) <= 1e-6
    # an unchanged corpus: nothing mapped, under either
    again = Recording(distributed=True)
    assert IngestPipeline(b, progress=False).run(again).published is False
    assert again.maps == []
