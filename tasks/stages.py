"""The one Prefect wrapper for library stages: ``run_stage(name, fn, *args)`` runs ``fn(*args)`` as a task named
``name``. The library owns every sequence (``IngestPipeline.run``, ``eval.evaluate.evaluate_testsets``,
``eval.sweep.run.run_sweep``) and asks its executor to run each step; the Prefect executor
(``tasks/executor.py``) runs it through this, so a flow shows one task per step without a copy of the sequence.
Retries and tags per stage name live in ``SETTINGS`` and nowhere else, the concurrency limit per tag in
``CONCURRENCY``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NONE
from prefect.utilities.annotations import quote


@dataclass(frozen=True)
class StageSettings:
    retries: int = 0
    retry_delay_seconds: int | list[int] = 0
    tags: list[str] = field(default_factory=list)


EMBEDDING_TAG = "ragrig-embedding"
# tag -> the task concurrency limit `prefect deploy` creates when missing (prefect.yaml's build step calls
# flows/deploy.py): one embedding at a time keeps two flows from fighting over a small machine's cores
CONCURRENCY: dict[str, int] = {EMBEDDING_TAG: 1}

# retries only where a retry can help: a stage that talks to Chroma (possibly over HTTP) or to MLflow, and
# a partition (a converter may fail on a busy machine; its per-document failures are kept inside the partition)
SETTINGS: dict[str, StageSettings] = {
    # one partition's extract + chunk (+ embed on Dask, where it may write to a Chroma server): a retry reads
    # the extraction cache; a Dask worker killed under it is rescheduled by Dask itself, and the partition embeds
    # only what it had not
    "partition": StageSettings(retries=1, retry_delay_seconds=1),
    "sweep-leftovers": StageSettings(retries=2, retry_delay_seconds=[1, 4]),
    "build-index": StageSettings(retries=2, retry_delay_seconds=[1, 4]),
    "embed": StageSettings(tags=[EMBEDDING_TAG]),  # the index's vectors and its views' (one slot, one task)
    "adapt-train": StageSettings(tags=[EMBEDDING_TAG]),  # the fine-tune uses the cores as an embedding does
    "adapt-log-mlflow": StageSettings(retries=2, retry_delay_seconds=2),
    "log-mlflow": StageSettings(retries=2, retry_delay_seconds=2),
}
DEFAULT = StageSettings()


def as_task(name: str, fn: Callable[..., Any]) -> Task[..., Any]:
    """``fn`` as a Prefect task named ``name``, with that stage's retries and tags (no result caching: stages
    read and write state)."""
    s = SETTINGS.get(name, DEFAULT)
    return task(fn, name=name, cache_policy=NONE, retries=s.retries, retry_delay_seconds=s.retry_delay_seconds,
                tags=list(s.tags))


def run_stage(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run one stage as a Prefect task named after it, in the flow's process. Its arguments are ``quote``d:
    Prefect would otherwise walk every element of every argument looking for futures to track (a stage
    takes plain values, never futures), which cost ~10 s per 100k chunks per argument and ~400 s of a 1M-chunk
    ingest (docs/scale.md)."""
    return as_task(name, fn)(*(quote(a) for a in args))
