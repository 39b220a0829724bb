"""The Prefect executor (``tasks/executor.py``): each step a task, ``map`` a mapped task whose results come back
in the calls' order, its arguments handed over without Prefect walking them on the thread runner."""

from __future__ import annotations

import pytest
from ragrig.tasks.executor import PrefectTasks

pytestmark = pytest.mark.slow


class Untouchable(list):
    """A list that fails when anything iterates it (Prefect walks a task argument it is not told to leave)."""

    def __iter__(self):
        raise AssertionError("a mapped argument was walked element by element")


def test_prefect_tasks_map_in_order_as_tasks_without_walking_the_arguments(prefect_api):
    from prefect import flow
    from prefect.context import TaskRunContext

    def size(label: str, batch: list) -> tuple[str, int, str]:
        return label, len(batch), TaskRunContext.get().task.name

    @flow
    def mapped() -> list:
        ex = PrefectTasks()
        calls = [("x", Untouchable([1, 2, 3])), ("y", Untouchable([])), ("z", Untouchable([4]))]
        return [list(ex.map("extract", size, calls)), list(ex.map("extract", size, [])),
                ex.call("double", lambda v: 2 * v, 21)]

    assert mapped() == [[("x", 3, "extract"), ("y", 0, "extract"), ("z", 1, "extract")], [], 42]
