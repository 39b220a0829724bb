"""The ingest Prefect flow (against a throwaway Prefect API) and the ``ragrig ingest`` command line."""

from __future__ import annotations

import json

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow

CORPUS = {
    "one.md": "# One\n\nFirst document text.\n\n## Detail\n\nA detail of the first.\n",
    "two.md": "# Two\n\nSecond document text.\n",
}


def overrides(corpus) -> list[str]:
    return [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"]


def test_ingest_flow_publishes_and_leaves_a_summary(prefect_api, tmp_path, write_files):
    from ragrig.flows.ingest import ingest_flow

    corpus = write_files(tmp_path / "corpus", CORPUS)
    state = ingest_flow(overrides=overrides(corpus), progress=False, return_state=True)
    assert state.is_completed()
    stats = state.result()
    assert (stats["published"], stats["version"], stats["docs_seen"], stats["chunks"]) == (True, "v000001", 2, 3)
    assert stats["chunks_embedded"] == 3 and stats["failures"] == []

    from prefect.artifacts import Artifact

    artifact = Artifact.get("ingest-summary")
    assert artifact is not None and artifact.type == "markdown"

    # unchanged corpus: the flow completes without publishing
    again = ingest_flow(overrides=overrides(corpus), progress=False)
    assert (again["published"], again["version"], again["chunks_embedded"]) == (False, "v000001", 0)


def test_cli_ingest_without_prefect_writes_json(tmp_path, write_files, ragrig_home):
    corpus = write_files(tmp_path / "corpus", CORPUS)
    out = tmp_path / "out" / "stats.json"
    argv = ["ingest", "--no-prefect", "--quiet", "--output-json", str(out)]
    for item in overrides(corpus):
        argv += ["--set", item]
    assert main(argv) == 0
    stats = json.loads(out.read_text())
    assert (stats["published"], stats["version"], stats["docs_seen"], stats["chunks"], stats["docs_failed"]) == (
        True, "v000001", 2, 3, 0,
    )
    assert stats["index_dir"].startswith(str(ragrig_home.resolve()))


def test_cli_max_failures_gate(tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", {**CORPUS, "bad.md": b"\x00\x00binary"})
    argv = ["ingest", "--no-prefect", "--quiet", "--max-failures", "0"]
    for item in overrides(corpus):
        argv += ["--set", item]
    assert main(argv) == 1


def test_cli_bad_config_value_exits_2(tmp_path, capsys):
    argv = ["ingest", "--no-prefect", "--set", f"corpus.path={tmp_path}", "--set", "chunking.max_header_level=9"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "chunking.max_header_level" in err and "less than or equal to 4" in err


def test_cli_missing_corpus_exits_2(tmp_path, capsys):
    argv = ["ingest", "--no-prefect", "--quiet", "--set", f"corpus.path={tmp_path / 'nope'}"]
    assert main(argv) == 2
    assert "does not exist" in capsys.readouterr().err
