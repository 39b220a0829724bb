"""benchmarks/serve_load.py ``--gc-freeze both``: servers without and with ``serve.gc_freeze`` alternate, and the
table's figures are the medians of each side's runs (the latency runs themselves need a server: stubbed here)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("serve_load")


def test_gc_freeze_pairs_alternate_off_and_on_and_take_medians(bench, monkeypatch):
    calls = []
    p99 = iter([100.0, 80.0, 300.0, 90.0, 120.0, 85.0])  # off, on, off, on, off, on

    def latency(*args, in_process_too=True):  # (home, levels, requests, tmp, config, queries, overrides)
        calls.append((args[-1][-1], in_process_too))
        v = next(p99)
        return {"levels": [{"clients": 4, "p50_ms": v / 2, "p95_ms": v, "p99_ms": v, "qps": 1000 / v}]}

    monkeypatch.setattr(bench, "latency", latency)
    out = bench.gc_freeze_pairs(("home", [4], 10, "tmp", "cfg", ["q"]), ["serve.torch_threads=1"], 3)
    assert calls == [("serve.gc_freeze=False", False), ("serve.gc_freeze=True", False)] * 3
    row = out["levels"][0]
    assert row["clients"] == 4 and row["off_p99_ms"] == 120.0 and row["on_p99_ms"] == 85.0
    assert row["off_p99_ms_runs"] == [100.0, 300.0, 120.0] and row["on_p50_ms"] == 42.5
    table = bench.markdown({"gc_freeze": out})
    assert "| 4 | 60.0 / 42.5 | 120.0 / 85.0 (100.0/80.0 300.0/90.0 120.0/85.0) | 0.71 |" in table, table
