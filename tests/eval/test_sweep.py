"""Sweeps: spec validation and expansion, and a small end-to-end sweep that shares its index, its
embeddings across chunking levels, and its candidates across fusion variants."""

from __future__ import annotations

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.sweep import expand, load_sweep, resolve, run_sweep

CORPUS = {
    "rules.md": "# Rules\n\n## Movement\n\nAn operative moves six inches.\n\n### Climbing\n\nClimbing costs two inches.\n\n"
                "## Shooting\n\nRoll attack dice.\n\n### Cover\n\nCover gives a save.\n",
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


def write_sweep(tmp_path, body: str):
    p = tmp_path / "sweep.yaml"
    p.write_text(body)
    return p


def test_expand_grid_then_explicit_configs_without_duplicates(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, """name: s
grid:
  retrieval.fusion.rrf_k: [10, 60]
  retrieval.fusion.method: [rrf]
configs:
  - {retrieval.fusion.method: weighted}
  - {retrieval.fusion.rrf_k: 10, retrieval.fusion.method: rrf}
"""))
    got = expand(spec)
    assert [ov for _, ov in got] == [
        {"retrieval.fusion.rrf_k": 10, "retrieval.fusion.method": "rrf"},
        {"retrieval.fusion.rrf_k": 60, "retrieval.fusion.method": "rrf"},
        {"retrieval.fusion.method": "weighted"},
    ]
    assert got[0][0] == "rrf_k=10, method=rrf"


@pytest.mark.parametrize(
    "body, message",
    [
        ("name: s\n", "needs a 'grid' and/or a list of 'configs'"),
        ("name: s\ngrid: {retrieval.top_k: []}\n", "non-empty list"),
        ("name: s\ngrid: {retrieval.top_k: [5]}\nbogus: 1\n", "sweep.yaml:3: bogus: unknown key"),
        ("name: bad name\ngrid: {retrieval.top_k: [5]}\n", "name"),
    ],
)
def test_bad_sweep_files_name_file_line_and_key(tmp_path, body, message):
    with pytest.raises(InputError, match=message):
        load_sweep(write_sweep(tmp_path, body))


def test_a_bad_value_fails_before_any_work_naming_the_config(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, "name: s\ngrid: {chunking.max_header_level: [3, 9]}\n"))
    with pytest.raises(InputError, match=r"(?s)sweep config 'max_header_level=9'.*chunking.max_header_level"):
        resolve(spec)


@pytest.mark.slow
def test_sweep_shares_indexes_embeddings_and_candidates(tmp_path, write_files):
    corpus = write_files(tmp_path / "corpus", CORPUS)
    (tmp_path / "ts.yaml").write_text(TESTSET)
    spec = load_sweep(write_sweep(tmp_path, f"""name: tiny-sweep
set: ["corpus.path={corpus}", "retrieval.synonyms=null", "eval.ragas=false", "eval.testsets=[{tmp_path / 'ts.yaml'}]"]
grid:
  chunking.max_header_level: [2, 3]
  retrieval.fusion.method: [rrf, weighted]
"""))
    result = run_sweep(spec, progress=False)
    assert len(result.rows) == 4 and {r.testset for r in result.rows} == {"tiny"}
    assert len(result.indexes) == 2 and len({r.index_key for r in result.rows}) == 2  # one index per level
    # embedded across both indexes == distinct chunk texts across both: nothing embedded twice
    assert sum(ix.embedded for ix in result.indexes) == result.indexes[-1].distinct_texts
    assert result.indexes[1].embedded < result.indexes[1].chunks  # level 3 reused level-2 texts
    assert result.best is not None and result.best.metrics["ndcg@10"] == max(r.metrics["ndcg@10"] for r in result.rows)
    assert all(r.run_id for r in result.rows) and result.parent_run_id
    from mlflow.tracking import MlflowClient

    child = MlflowClient().get_run(result.rows[0].run_id)
    assert child.data.tags["mlflow.parentRunId"] == result.parent_run_id
    # a child logs its own overrides and the provenance; the parent holds the rest of the base config
    swept = set(result.rows[0].overrides)
    assert swept and swept <= set(child.data.params)
    assert "index.version" in child.data.params and "embedding.model" not in child.data.params
    parent_params = MlflowClient().get_run(result.parent_run_id).data.params
    assert "embedding.model" in parent_params and not swept & set(parent_params)
    parent = MlflowClient().list_artifacts(result.parent_run_id)
    assert {"sweep_summary.md", "sweep.json"} <= {a.path for a in parent}
