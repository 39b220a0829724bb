"""A small end-to-end sweep that shares its index, its embeddings across chunking levels, and its candidates
across fusion variants, and evaluates every (config, test set) through ``evaluate_testsets``; and the same sweep
through a distributed executor (what flow.runner dask passes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.eval.sweep.run import run_sweep
from ragrig.eval.sweep.spec import load_sweep
from ragrig.retrieval.executor import Executor

CORPUS = {
    "rules.md": "# Rules\n\n## Movement\n\nAn operative moves six inches.\n\n"
                "### Climbing\n\nClimbing costs two inches.\n\n"
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


def tiny_sweep(tmp_path: Path, write_files, name: str) -> Path:
    """The two-document corpus, its test set and a 2 x 2 sweep over them (two indexes, two fusions each)."""
    corpus = write_files(tmp_path / "corpus", CORPUS)
    (tmp_path / "ts.yaml").write_text(TESTSET)
    p = tmp_path / "sweep.yaml"
    p.write_text(f"""name: {name}
set: ["corpus.path={corpus}", "retrieval.synonyms=null", "eval.ragas=false", "eval.testsets=[{tmp_path / 'ts.yaml'}]"]
grid:
  chunking.max_header_level: [2, 3]
  retrieval.fusion.method: [rrf, weighted]
""")
    return p


@pytest.mark.slow
def test_sweep_shares_indexes_embeddings_and_candidates(tmp_path, write_files, monkeypatch):
    import ragrig.eval.sweep.remote as sweep_remote  # the one per-config loop, which the in-process sweep runs

    calls = []
    real = sweep_remote.evaluate_testsets

    def spy(cfg, testsets, **kw):
        calls.append((cfg.retrieval.fusion.method, [t.name for t in testsets], kw))
        return real(cfg, testsets, **kw)

    monkeypatch.setattr(sweep_remote, "evaluate_testsets", spy)
    spec = load_sweep(tiny_sweep(tmp_path, write_files, "tiny-sweep"))
    result = run_sweep(spec, progress=False)
    assert len(result.rows) == 4 and {r.testset for r in result.rows} == {"tiny"}
    # every (config, test set) went through the one evaluate-and-log function, on its index's shared retriever
    # and resolved test set, logged as a child of the sweep's parent run
    assert [(method, names) for method, names, _ in calls] == [("rrf", ["tiny"]), ("weighted", ["tiny"])] * 2
    retrievers = [kw["retriever"] for _, _, kw in calls]
    assert retrievers[0] is retrievers[1] and retrievers[2] is retrievers[3] and retrievers[0] is not retrievers[2]
    assert calls[0][2]["targets"][0] is calls[1][2]["targets"][0]
    assert [kw["label"] for _, _, kw in calls] == [r.label for r in result.rows]
    assert {kw["log"].run_name for _, _, kw in calls} == {f"tiny-sweep: {r.label}" for r in result.rows}
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


@pytest.mark.slow
def test_a_mapped_sweep_equals_the_plain_one(tmp_path, write_files, monkeypatch):
    """The sweep through a distributed executor (what flow.runner dask passes: here one that calls in this
    process, in order): every index ingested first, each config one ``remote.evaluate_config`` call, the rows and
    on_report calls equal to the plain sweep's, and with the SQLite store the driver logs each child under the
    parent."""
    from ragrig.eval.sweep import remote

    spec = load_sweep(tiny_sweep(tmp_path, write_files, "mapped"))
    plain = run_sweep(spec, progress=False)
    calls: list[tuple] = []

    class Mapped(Executor):
        distributed = True

        def map(self, name, fn, items):
            calls.extend(items)
            return (fn(*args) for args in items)

    seen: list[tuple[str, str]] = []
    try:
        mapped = run_sweep(spec, progress=False, executor=Mapped(),
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


def test_a_group_is_ingested_with_a_config_that_reads_chroma_when_one_does(make_config, tmp_path):
    """Configs sharing an index where one searches Chroma: the index is ingested with that one, so the version
    writes the collection it will read (the default writes none)."""
    from ragrig.eval.sweep.run import ingest_config

    plain = make_config(tmp_path, "retrieval.top_k=5")
    reads = make_config(tmp_path, "index.vector_search.mode=chroma")
    assert plain.ingest_hash() == reads.ingest_hash()  # one index
    assert ingest_config([("a", {}, plain), ("b", {}, reads)]) is reads
    assert ingest_config([("a", {}, plain), ("b", {}, plain)]) is plain


@pytest.mark.slow
def test_an_adapted_candidate_is_evaluated_logged_and_reported_with_its_folder(tmp_path, write_files, monkeypatch,
                                                                              capsys):
    """``embedding.adapt: true`` in a sweep: evaluated on the folder training gave it (here a stand-in: the
    packaged MiniLM's own folder, a local model of its own id), recorded in ``result.trained``, logged as its
    child's ``embedding.model`` and printed as the runnable overrides."""
    from mlflow.tracking import MlflowClient
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.eval.sweep.spec import resolve as resolve_configs
    from ragrig.flows.render.sweep import print_sweep
    from ragrig.retrieval.adapt import run as adapt_run
    from ragrig.retrieval.encoders.resolve import resolve

    folder = resolve(EmbeddingConfig()).target

    class Trained:
        model = folder

    monkeypatch.setattr(adapt_run, "adapt", lambda cfg, out, *, progress, executor: Trained())
    corpus = write_files(tmp_path / "corpus", CORPUS)
    (tmp_path / "ts.yaml").write_text(TESTSET)
    p = tmp_path / "sweep.yaml"
    p.write_text(f"""name: adapted
set: ["corpus.path={corpus}", "retrieval.synonyms=null", "eval.ragas=false", "eval.testsets=[{tmp_path / 'ts.yaml'}]"]
configs:
  - {{embedding.adapt: true, retrieval.fusion.method: rrf}}
""")
    result = run_sweep(load_sweep(p), progress=False)
    (row,) = result.rows
    assert result.trained == {row.label: {"embedding.model": folder}}
    assert row.index_key != resolve_configs(load_sweep(p))[0][2].index_key()  # its own index, not the base's
    assert MlflowClient().get_run(row.run_id).data.params["embedding.model"] == folder
    print_sweep(result.to_dict())
    out = capsys.readouterr().out
    assert f"overrides: --set retrieval.fusion.method=rrf --set embedding.model={folder}" in out
    assert f"trained by ragrig adapt: --set embedding.model={folder}" in out
