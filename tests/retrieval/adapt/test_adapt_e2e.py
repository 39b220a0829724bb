"""``ragrig adapt --no-prefect`` on part of the sample corpus (tests/sample_part.py) with a tiny recipe (16 pairs,
batches of 8, 32 tokens): the folder loads as an ordinary sentence-transformers model with its own content id, two
runs write the same bytes, the JSON and the MLflow run hold what they should, the comparison ingests and evaluates
the adapted model, and ``--set embedding.model=<folder>`` works for eval; the training reads no test set."""

from __future__ import annotations

import builtins
import hashlib
import io
import json
from pathlib import Path

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
TESTSET = ROOT / "datasets" / "testsets" / "sample.yaml"
# the second encoder off: adapt trains and compares the torch encoder, and each ingest here would embed every chunk
# with bge-small too (a third of the sample's ingest), for nothing this file checks
TINY = ["--set", "embedding.adapt.max_pairs=16", "--set", "embedding.adapt.batch_size=8",
        "--set", "embedding.adapt.max_tokens=32", "--set", "eval.ragas=false",
        "--set", "retrieval.fusion.weights.vector2=0"]


@pytest.fixture(scope="module")
def tiny(sample_part) -> list[str]:
    """``TINY`` on part of the sample and the cases of its test set that the part answers: adapt's comparison
    ingests the adapted model's index and evaluates both; what is checked here is the machinery, not the gain."""
    corpus, testset = sample_part
    return [*TINY, "--set", f"corpus.path={corpus}", "--set", f"eval.testsets=[{testset}]"]


@pytest.fixture(scope="module")
def sample_published(tmp_path_factory, tiny) -> Path:
    """The part ingested once for the file (``tiny``'s settings: adapt reads the published version); each test
    copies this home into its own, so it may adapt, ingest and evaluate there freely."""
    import os

    from ragrig.configs.load import load_config
    from ragrig.retrieval.index import chroma
    from ragrig.retrieval.index.layout import Layout

    home = tmp_path_factory.mktemp("adapt") / "home"
    previous = os.environ.get("RAGRIG_HOME")
    os.environ["RAGRIG_HOME"] = str(home)
    try:
        assert main(["ingest", "--no-prefect", "-q", *tiny]) == 0
        cfg = load_config(overrides=tiny[1::2])
        chroma.forget_client(cfg.index.chroma, Layout(cfg).chroma_dir)  # its store closed before the copies
    finally:
        os.environ.pop("RAGRIG_HOME")
        if previous is not None:
            os.environ["RAGRIG_HOME"] = previous
    return home


def copy_home(published: Path, home: Path) -> None:
    import shutil

    shutil.copytree(published, home, symlinks=True, dirs_exist_ok=True)


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_adapt_end_to_end(tmp_path: Path, ragrig_home: Path, sample_published: Path, tiny: list[str], sample_part,
                          monkeypatch, capsys) -> None:
    from ragrig.configs.load import load_config
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.embedding import model_id

    import yaml

    copy_home(sample_published, ragrig_home)  # `ragrig ingest --no-prefect -q *tiny`, run once for the file
    first, out_json = tmp_path / "m1", tmp_path / "a.json"
    assert main(["adapt", "--no-prefect", "-q", *tiny, "--output", str(first), "--output-json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    assert str(first) in printed and f"--set embedding.model={first}" in printed

    result = json.loads(out_json.read_text())
    assert result["model"] == str(first) and result["pairs"] == 16 and result["steps"] == 2  # 16 pairs / 8
    assert result["seconds"] > 0 and len(result["losses"]) == 2 and not result["reused"]
    assert sum(result["pair_counts"].values()) == 16 and set(result["pair_counts"]) >= {"header_body", "cloze"}
    cmp = result["compare"]
    cases = len(yaml.safe_load(sample_part[1].read_text())["cases"])
    assert [r["label"] for r in cmp["rows"]] == ["base", "adapted"] and cmp["cases"] == cases > 5
    base_key, adapted_key = (r["index_key"] for r in cmp["rows"])
    assert base_key != adapted_key  # the adapted model was ingested into its own index and evaluated there
    assert set(cmp["tests"]) == {"ndcg@10", "recall@10"} and 0 <= cmp["tests"]["ndcg@10"]["p"] <= 1
    assert "verdict (nDCG@10): the adapted model is" in printed

    # an ordinary sentence-transformers folder, identified by its content like any local folder
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(first), device="cpu")
    assert model.max_seq_length == 256 and model.encode(["grapple"]).shape == (1, 384)
    adapted_id, base_id = model_id(EmbeddingConfig(model=str(first))), model_id(EmbeddingConfig())
    assert "sha256:" in adapted_id and adapted_id != base_id and result["base_model"] == base_id

    # the MLflow run: the recipe and pair counts, the loss at every step, the base model and corpus version
    from mlflow.tracking import MlflowClient
    from ragrig.eval.tracking.store import ensure_experiment

    cfg = load_config(overrides=tiny[1::2])
    exp = ensure_experiment(cfg)
    client = MlflowClient()
    [run] = client.search_runs([exp], "tags.`ragrig.command` = 'adapt'")
    assert run.info.run_id == result["mlflow_run_id"]
    assert run.data.params["adapt.max_pairs"] == "16" and run.data.params["adapt.lr"] == "3e-05"
    assert int(run.data.params["adapt.pairs.header_body"]) == result["pair_counts"]["header_body"]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [1, 2]
    assert run.data.tags["ragrig.adapt.base_model"] == base_id
    assert run.data.tags["ragrig.adapt.corpus_version"] == f"{result['index_key']}@{result['version']}"

    # --set embedding.model=<folder>: eval uses it (its index was ingested by the comparison above)
    ev = tmp_path / "eval.json"
    assert main(["eval", "--no-prefect", *tiny, "--set", f"embedding.model={first}", "--output-json", str(ev)]) == 0
    report = json.loads(ev.read_text())
    assert report["index"]["model_id"] == adapted_id and report["index"]["key"] == adapted_key

    # a second run: the same bytes in every file; and the training opens no test set (the config's, the sample's)
    real_open, real_io_open = builtins.open, io.open
    testsets = {TESTSET.resolve(), sample_part[1].resolve()}

    def trapped(file, *a, **k):
        if Path(str(file)).resolve() in testsets if isinstance(file, (str, Path)) else False:
            raise AssertionError(f"adapt opened the test set {file}")
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", trapped)
    monkeypatch.setattr(io, "open", trapped)
    second = tmp_path / "m2"
    assert main(["adapt", "--no-prefect", "-q", "--no-compare", *tiny, "--output", str(second)]) == 0
    monkeypatch.undo()
    assert digests(first) == digests(second)
    assert "ragrig_adapt.json" in digests(first) and "model.safetensors" in digests(first)


def test_the_pairs_hold_no_test_case_text(ragrig_home: Path, sample_published: Path, sample_part) -> None:
    """Every pair kind, from the part's published version, against every query of the sample's whole test set."""
    import yaml
    from ragrig.configs.load import load_config
    from ragrig.retrieval.adapt.run import prepare

    copy_home(sample_published, ragrig_home)
    cfg = load_config(overrides=["embedding.adapt.pairs=[header_body, cloze, keyword_section, parent_child]",
                                 "retrieval.fusion.weights.vector2=0", f"corpus.path={sample_part[0]}",
                                 f"eval.testsets=[{sample_part[1]}]"])
    prep = prepare(cfg)
    queries = {c["query"].casefold().strip() for c in yaml.safe_load(TESTSET.read_text())["cases"]}
    texts = {t.casefold().strip() for p in prep.pairs for t in (p.anchor, p.positive)}
    assert len(prep.pairs) > 100 and not queries & texts
    assert all(q not in t for q in queries for t in texts if len(q) > 30)
