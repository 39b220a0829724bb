"""How many torch threads the server encodes its queries with: ``serve.torch_threads`` as a number, or ``auto``,
chosen by a quick measurement at start-up (~0.3 s on a quiet machine, a few seconds at most on a busy one).

The server encodes one short query at a time. On a quiet 2-core machine 2 threads encode a SciFact query in
~11 ms against ~15 ms on 1; on a busy one 2 threads were 6-10x slower than 1 (OpenMP threads spin when the cores
are oversubscribed). Neither number is right everywhere, so ``auto`` times both on the loaded model, alternating,
and keeps the larger count only when it is clearly faster (by ``MARGIN``): when they are close, 1 thread is the
choice that does not fall over when the machine gets busy later.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# query-like texts of SciFact's length (8-25 words): what the server encodes, one at a time
PROBES = (
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "how far can an operative move when it dashes across open ground",
    "Cardiac injury is common in critical cases of COVID-19 and is associated with higher mortality.",
    "what does cover give against a shooting attack from a ranged weapon",
    "Antiretroviral therapy reduces rates of tuberculosis across a broad range of CD4 strata.",
)
MARGIN = 0.9  # more threads must take at most 90% of 1 thread's median time
ROUNDS = 5
BUDGET_S = 3.0


@dataclass
class ThreadChoice:
    threads: int
    setting: int | str
    median_ms: dict[int, float] = field(default_factory=dict)  # measured (auto only): threads -> median ms/query

    def describe(self) -> str:
        if not self.median_ms:
            return f"{self.threads} (serve.torch_threads={self.setting})"
        timed = ", ".join(f"{n} thread{'s' * (n > 1)} {ms:.1f} ms" for n, ms in sorted(self.median_ms.items()))
        return f"{self.threads} (auto: median per query {timed})"


def measure(encode: Callable[[str], object], candidates: Sequence[int], set_threads: Callable[[int], None],
            probes: Sequence[str] = PROBES, rounds: int = ROUNDS, budget_s: float = BUDGET_S,
            clock: Callable[[], float] = time.perf_counter) -> dict[int, float]:
    """Median ms of ``encode(probe)`` under each thread count, the counts alternating round by round (a load
    change hits both), after one warm-up each; stops early after ``budget_s``."""
    samples: dict[int, list[float]] = {n: [] for n in candidates}
    for n in candidates:
        set_threads(n)
        encode(probes[0])  # warm-up: the first call under a new thread count builds its pool
    start = clock()
    for r in range(rounds):
        order = list(candidates) if r % 2 == 0 else list(reversed(candidates))
        for n in order:
            set_threads(n)
            for p in probes[r % 2::2]:
                t0 = clock()
                encode(p)
                samples[n].append((clock() - t0) * 1000)
        if clock() - start > budget_s:
            break
    return {n: statistics.median(xs) for n, xs in samples.items()}


def pick(median_ms: dict[int, float], margin: float = MARGIN) -> int:
    """1 thread unless a larger count's median is at most ``margin`` times 1 thread's (then the fastest)."""
    one = median_ms.get(1, float("inf"))
    best = min(median_ms, key=lambda n: (median_ms[n], n))
    return best if best == 1 or median_ms[best] <= margin * one else 1


def choose_torch_threads(setting: int | str, encode: Callable[[str], object]) -> ThreadChoice:
    """Apply ``serve.torch_threads`` to this process and say what was chosen. Call it on the thread that will
    encode (``ragrig serve`` runs it on its search thread): torch's count is process-wide, but its OpenMP pool
    belongs to the calling thread, and a second pool made every served query ~35 % slower."""
    import torch

    if setting != "auto":
        torch.set_num_threads(int(setting))
        return ThreadChoice(int(setting), setting)
    default = torch.get_num_threads()
    candidates = sorted({1, default})
    if len(candidates) == 1:
        torch.set_num_threads(1)
        return ThreadChoice(1, setting)
    median_ms = measure(encode, candidates, torch.set_num_threads)
    threads = pick(median_ms)
    torch.set_num_threads(threads)
    return ThreadChoice(threads, setting, median_ms)
