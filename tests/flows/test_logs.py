"""--log-json: one JSON object per line, with per-stage timings and counts, and per-query candidates."""

from __future__ import annotations

import json
import logging

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def restore_logging():
    yield
    lg = logging.getLogger("ragrig")
    lg.handlers[:] = []
    lg.propagate = True
    lg.setLevel(logging.NOTSET)


def test_json_logs_carry_stage_and_query_fields(tmp_path, write_files, capsys):
    corpus = write_files(tmp_path / "corpus", {"a.md": "# A\n\n## Move\n\nMove six inches.\n\n## Shoot\n\nRoll dice.\n"})
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    assert main(["--log-json", "--log-level", "INFO", "ingest", "--no-prefect", "-q", *sets]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    stages = {x["stage"]: x for x in lines if x.get("event") == "ingest.stage"}
    assert {"discover", "plan", "partitions", "embed", "index", "publish"} <= set(stages)
    assert stages["embed"]["chunks_embedded"] == 2 and stages["discover"]["docs_seen"] == 1
    assert all(isinstance(x["seconds"], float) for x in stages.values())
    assert main(["--log-json", "--log-level", "DEBUG", "query", "how far can I move?", *sets]) == 0
    q = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{") and '"retrieval.query"' in x]
    assert q and q[0]["candidates"]["bm25"] >= 1 and q[0]["candidates"]["vector"] == 2 and "deduplicated" in q[0]
    assert {"embed", "bm25", "vector", "fuse", "shape"} <= set(q[0]["timings_ms"])
