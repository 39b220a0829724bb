"""serve.torch_threads: a number is applied as given; ``auto`` times 1 thread against torch's default, alternating,
and keeps more threads only when clearly faster."""

from __future__ import annotations

import pytest
from ragrig.retrieval.serve.threads import MARGIN, measure, pick


@pytest.mark.parametrize("median_ms, threads", [
    ({1: 15.0, 2: 11.0}, 2),          # a quiet 2-core machine: 2 threads clearly faster
    ({1: 15.0, 2: 14.0}, 1),          # within the margin: 1 thread, the choice that survives a busy machine
    ({1: 15.0, 2: 15.0 * MARGIN}, 2),  # exactly at the margin
    ({1: 50.0, 2: 400.0}, 1),         # a busy machine: OpenMP threads spinning
    ({1: 20.0, 4: 9.0, 8: 8.0}, 8),   # the fastest of several
])
def test_pick(median_ms, threads):
    assert pick(median_ms) == threads


def test_measure_alternates_the_thread_counts_and_takes_medians():
    current = {"n": 0}
    calls: list[tuple[int, str]] = []
    ticks = iter(range(10_000))

    def clock() -> float:  # 1 ms per tick; an encode on n threads takes 10/n ticks
        return next(ticks) / 1000

    def encode(text: str) -> None:
        calls.append((current["n"], text))
        for _ in range(10 // current["n"] - 1):
            clock()

    result = measure(encode, [1, 2], lambda n: current.update(n=n), probes=["a", "b", "c", "d"], rounds=4,
                     budget_s=100, clock=clock)
    assert result == pytest.approx({1: 10.0, 2: 5.0})
    counts = [n for n, _ in calls[2:]]  # after one warm-up each
    assert counts == [1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1]  # each round both, the order alternating
