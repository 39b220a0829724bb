"""The Prefect executor (``retrieval/executor.py``'s interface): every step of a library sequence a Prefect task
(``run_stage``), every ``map`` a mapped task on the flow's task runner — threads, or Dask workers with
``flow.runner: dask`` (then ``distributed``: an ingest maps its partitions, ``partition.run_partition``, instead
of extracting here). No logic lives here: the sequences are the library's.

A worker that dies mid-partition is Dask's to reschedule (``distributed.scheduler.allowed-failures``); the
partition is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from prefect.utilities.annotations import quote
from ragrig.retrieval.executor import Executor
from ragrig.tasks.stages import as_task, run_stage

T = TypeVar("T")


class PrefectTasks(Executor):
    def __init__(self, distributed: bool = False) -> None:
        self.distributed = distributed

    def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        return run_stage(name, fn, *args)

    def map(self, name: str, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> Iterator[T]:
        """Submit every call at once (the task runner decides the parallelism), yield the results in order. On
        threads each argument is ``quote``d, as ``run_stage`` quotes them (Prefect would walk every document of
        an extraction batch); on the Dask task runner it is not: a quoted mapped argument reaches the worker
        still wrapped (Prefect 3.x), and a partition's job is small."""
        if not calls:
            return
        columns = [list(col) for col in zip(*calls)]
        if not self.distributed:
            columns = [[quote(a) for a in col] for col in columns]
        for fut in as_task(name, fn).map(*columns):
            yield fut.result()
