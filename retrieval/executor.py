"""Where the library's work runs: one interface, so that no sequence knows which executor runs it.

The library owns every sequence (``IngestPipeline.run``, ``eval.evaluate.evaluate_testsets``,
``eval.sweep.run.run_sweep``, ``ragrig tune``, ``ragrig adapt``) and asks its ``Executor`` for two things only:

- ``call(name, fn, *args)``: run one named step and return what it returns (a Prefect flow shows it as a task);
- ``map(name, fn, calls)``: run ``fn(*args)`` for every ``args`` of ``calls``, anywhere, yielding the results in
  the calls' order. ``distributed`` says whether that "anywhere" is other processes, which share only the
  home's files: an ingest then runs its partitions there and merges their shards (``ingest/partitions.py``),
  a sweep ingests first and maps its configs' evaluations.

Three implementations, one per place the work can run:

- ``Executor`` here: this process, in order (``IN_PROCESS``, every sequence's default);
- ``tasks/executor.py`` ``PrefectTasks``: every step a Prefect task, ``map`` a mapped task on the flow's task
  runner (threads, or Dask workers with ``flow.runner: dask``);
- ``flows/runners.py`` ``DaskClient``: ``map`` as Dask futures on a LocalCluster or the cluster at
  ``flow.address`` (``cluster_executor``), the steps through another executor (here, or Prefect tasks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["IN_PROCESS", "Executor"]

T = TypeVar("T")


class Executor:
    """This process, in order: ``call`` calls, ``map`` calls one after the other as the results are taken."""

    distributed: bool = False
    """Whether ``map`` runs its calls in other processes (that share the home's files, not this memory)."""

    def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)

    def map(self, name: str, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> Iterator[T]:
        for args in calls:
            yield fn(*args)


IN_PROCESS = Executor()
