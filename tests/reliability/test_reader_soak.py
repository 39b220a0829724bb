"""Issue 19, item 4, end to end: reader processes query in a loop (long-lived readers kept open across
publishes, and fresh ones racing each prune) while ingests publish and prune at ``keep_versions: 1``: no
errors and no mixed-version answers. A short run of benchmarks/reader_soak.py (the long one is run by hand:
docs/reliability.md has its counts)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("bench_reader_soak", ROOT / "benchmarks" / "reader_soak.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def test_readers_in_other_processes_never_fail_or_mix_versions_while_ingests_publish_and_prune(soak, tmp_path):
    out = soak.run_soak(readers=2, ingests=3, seconds=45, workdir=tmp_path, pause_s=0.3)
    assert out["ingests_published"] >= 2, out
    assert out["errors"] == 0 and out["mixed"] == 0, out
    assert out["answers"] > 0 and len(out["versions_seen"]) >= 2, out  # readers saw publishes happen
    assert out["healthy_after"] and out["leftovers_after"] == [], out
