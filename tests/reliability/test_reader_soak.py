"""Issue 19, item 4, end to end: reader processes query in a loop (long-lived readers kept open across
publishes, and fresh ones racing each prune) while ingests publish and prune at ``keep_versions: 1``: no
errors and no mixed-version answers. A short run of benchmarks/reader_soak.py (the long one is run by hand:
docs/reliability.md has its counts)."""

from __future__ import annotations


import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def soak(load_benchmark):
    return load_benchmark("reader_soak")


def test_readers_in_other_processes_never_fail_or_mix_versions_while_ingests_publish_and_prune(soak, tmp_path):
    out = soak.run_soak(readers=2, ingests=3, seconds=45, workdir=tmp_path, pause_s=0.3)
    assert out["ingests_published"] >= 2, out
    assert out["errors"] == 0 and out["mixed"] == 0, out
    assert out["answers"] > 0 and len(out["versions_seen"]) >= 2, out  # readers saw publishes happen
    assert out["healthy_after"] and out["leftovers_after"] == [], out
