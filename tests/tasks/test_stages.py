"""The one Prefect wrapper: a stage becomes a task named after it, with the retries and tags of its row in
``SETTINGS`` (and none for a stage without a row), and runs inside a flow."""

from __future__ import annotations

import pytest
from ragrig.tasks.stages import SETTINGS, as_task, run_stage


@pytest.mark.parametrize(
    "name, retries, delays, tags",
    [
        ("log-mlflow", 2, 2, []),
        ("build-index", 2, [1, 4], []),
        ("sweep-leftovers", 2, [1, 4], []),
        ("partition", 1, 1, []),
        ("embed", 0, 0, ["ragrig-embedding"]),
        ("retrieve-and-score", 0, 0, []),  # no row: no retries, no tags
    ],
)
def test_a_stage_gets_the_settings_of_its_row(name, retries, delays, tags):
    def step(x: int) -> int:
        return x

    t = as_task(name, step)
    assert (t.name, t.retries, t.retry_delay_seconds, t.tags) == (name, retries, delays, set(tags))


def test_every_row_names_a_stage_the_library_runs():
    """A misspelt row would silently leave its stage without retries: each name must be one the library runs."""
    import re
    from pathlib import Path

    import ragrig.eval.adapt
    import ragrig.eval.evaluate
    import ragrig.eval.sweep.run
    import ragrig.retrieval.adapt.run
    import ragrig.retrieval.ingest.partitions
    import ragrig.retrieval.ingest.pipeline

    names = set()
    for mod in (ragrig.retrieval.ingest.pipeline, ragrig.retrieval.ingest.partitions, ragrig.eval.evaluate,
                ragrig.eval.sweep.run, ragrig.retrieval.adapt.run, ragrig.eval.adapt):
        names |= set(re.findall(r'(?:call|map|as_task)\("([a-z-]+)"', Path(mod.__file__).read_text()))
    assert {"discover", "retrieve-and-score", "log-mlflow", "partition"} <= names  # the pattern finds them
    assert set(SETTINGS) <= names


@pytest.mark.slow
def test_run_stage_runs_the_step_as_a_task_in_a_flow(prefect_api):
    from prefect import flow

    @flow
    def twice(x: int) -> int:
        return run_stage("double", lambda v: 2 * v, x)

    assert twice(21) == 42


class Untouchable(list):
    """A list that fails when anything iterates it: what Prefect does to a task argument it is not told to
    leave alone (it walks every element looking for futures)."""

    def __iter__(self):
        raise AssertionError("a stage argument was walked element by element")


@pytest.mark.slow
def test_run_stage_hands_its_arguments_over_without_walking_them(prefect_api):
    """A stage gets ingest's chunk lists whole: walking 1M chunks cost ~100 s per argument."""
    from prefect import flow

    chunks = Untouchable([1, 2, 3])

    @flow
    def stage_of_a_big_list() -> int:
        return run_stage("count", lambda cs: (type(cs).__name__, len(cs)), chunks)

    assert stage_of_a_big_list() == ("Untouchable", 3)


def test_the_embedding_tag_has_a_concurrency_limit_to_create():
    from ragrig.tasks.stages import CONCURRENCY, EMBEDDING_TAG

    assert EMBEDDING_TAG in SETTINGS["embed"].tags and CONCURRENCY == {EMBEDDING_TAG: 1}


@pytest.fixture
def no_embedding_limit(prefect_api):
    """The session's Prefect server without the ragrig-embedding limit, before and after the test."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    def drop() -> None:
        with get_client(sync_client=True) as c:
            try:
                c.delete_concurrency_limit_by_tag("ragrig-embedding")
            except ObjectNotFound:
                pass

    drop()
    yield
    drop()


@pytest.mark.slow
def test_deploying_creates_missing_concurrency_limits_and_keeps_existing_ones(no_embedding_limit):
    """prefect.yaml's build step: the limit appears on the first deploy; a later deploy neither duplicates it nor
    resets a value an operator changed."""
    from prefect.client.orchestration import get_client
    from ragrig.flows.deploy import ensure_concurrency_limits

    assert ensure_concurrency_limits() == {"concurrency_limits": {"ragrig-embedding": 1},
                                           "created": ["ragrig-embedding"]}
    with get_client(sync_client=True) as c:
        c.create_concurrency_limit(tag="ragrig-embedding", concurrency_limit=3)  # an operator raises it
    assert ensure_concurrency_limits() == {"concurrency_limits": {"ragrig-embedding": 3}, "created": []}
    with get_client(sync_client=True) as c:
        assert c.read_concurrency_limit_by_tag("ragrig-embedding").concurrency_limit == 3
        assert [x.tag for x in c.read_concurrency_limits(limit=50, offset=0)].count("ragrig-embedding") == 1

