"""benchmarks/driver_memory.py's bookkeeping: each stage's peak is its own (the sampler's peak starts again at every
point), and the table has a row per stage end."""

from __future__ import annotations

import time


def test_each_point_gets_the_peak_since_the_last_and_the_table_a_row_each(load_benchmark, capsys):
    bench = load_benchmark("driver_memory")
    sampler = bench.Sampler()
    try:
        sampler.note(10_000.0)  # as if a stage had peaked high (through the lock: the thread notes at any time)
        now, peak = sampler.mark()
        assert peak == 10_000.0 and now < 10_000.0
        time.sleep(0.12)
        again_now, again_peak = sampler.mark()
        assert again_peak < 10_000.0 and again_peak >= min(now, again_now)  # the next stage starts from now
    finally:
        sampler.stop()
    bench.print_table({"size": 1000, "wall_s": 1.5, "peak_rss_mib": 300, "start_rss_mib": 100,
                       "peak_kb_per_chunk": 204.8, "points": [
                           {"point": "after:embed", "seconds": 0.5, "rss_mib": 250, "peak_mib": 280},
                           {"point": "index:bm25", "seconds": 0.7, "rss_mib": 260, "peak_mib": 300}]})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1,000 chunks: wall 1.5 s, peak RSS 300 MiB (start 100 MiB: 204.8 kB a chunk above it)"
    assert out[-2:] == ["| after:embed | 0.5 | 250 | 280 |", "| index:bm25 | 0.7 | 260 | 300 |"]
