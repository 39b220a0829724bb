"""The sweep through a mapper (what flow.runner dask passes: here one that calls in this process, in order): every
index ingested first, each config one ``remote.evaluate_config`` call, the rows and on_report calls equal to the
plain sweep's, and with the SQLite store the driver logs each child under the parent."""

from __future__ import annotations

import pytest
from ragrig.eval.sweep import remote
from ragrig.eval.sweep.run import run_sweep
from ragrig.eval.sweep.spec import load_sweep

CORPUS = {
    "rules.md": "# Rules\n\n## Movement\n\nAn operative moves six inches.\n\n### Climbing\n\nClimbing costs two "
                "inches.\n\n## Shooting\n\nRoll attack dice.\n\n### Cover\n\nCover gives a save.\n",
    "weapons.md": "# Weapons\n\n## Lethal x+\n\nCritical on x+.\n\n## Piercing x\n\nThe defender loses x dice.\n",
}
TESTSET = """name: tiny
cases:
  - id: climb
    query: how much does climbing cost?
    expect: [{doc: rules.md, section: Climbing}]
  - id: lethal
    query: when is a hit critical with lethal?
    expect: [{doc: weapons.md, section: "Lethal x+"}]
"""


@pytest.mark.slow
def test_a_mapped_sweep_equals_the_plain_one(tmp_path, write_files, monkeypatch):
    corpus = write_files(tmp_path / "corpus", CORPUS)
    (tmp_path / "ts.yaml").write_text(TESTSET)
    (tmp_path / "sweep.yaml").write_text(f"""name: mapped
set: ["corpus.path={corpus}", "retrieval.synonyms=null", "eval.ragas=false", "eval.testsets=[{tmp_path / 'ts.yaml'}]"]
grid:
  chunking.max_header_level: [2, 3]
  retrieval.fusion.method: [rrf, weighted]
""")
    spec = load_sweep(tmp_path / "sweep.yaml")
    plain = run_sweep(spec, progress=False)
    calls: list[tuple] = []

    def mapper(fn, items):
        calls.extend(items)
        return (fn(*args) for args in items)

    seen: list[tuple[str, str]] = []
    try:
        mapped = run_sweep(spec, progress=False, mapper=mapper,
                           on_report=lambda row, report: seen.append((row.label, report.testset)))
    finally:
        remote._opened.clear()  # the "worker" here is this process: drop its open version
    assert [(r.label, r.index_key, r.metrics) for r in mapped.rows] == [
        (r.label, r.index_key, r.metrics) for r in plain.rows]
    assert seen == [(r.label, "tiny") for r in plain.rows]
    assert len(calls) == 4 and len(mapped.indexes) == 2
    # each call: the group's config, the version the driver pinned, and no log (SQLite: the driver logs)
    assert all(c[6] is None and c[1] == "v000001" and c[4].home for c in calls)
    import mlflow

    client = mlflow.tracking.MlflowClient()
    parent = client.get_run(mapped.parent_run_id)
    kids = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{mapped.parent_run_id}'")
    assert sorted(k.info.run_id for k in kids) == sorted(r.run_id for r in mapped.rows)
    assert all(k.info.status == "FINISHED" for k in kids)
