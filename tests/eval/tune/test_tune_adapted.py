"""An adapted candidate in a tune space (``embedding.adapt: true``): validated with the others, kept apart from
the default it equals before training, and trained (or found) into the default folder before any evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError

from ragrig.configs.load import load_config
from ragrig.eval.sweep import adapted
from ragrig.eval.tune.space import load_space, resolve_space
from ragrig.retrieval.executor import Executor

ROOT = Path(__file__).resolve().parents[3]


def test_the_adapt_flag_is_not_a_config_value_and_the_candidate_stays(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text("name: s\nset: [eval.ragas=false]\nconfigs:\n  - {embedding.adapt: true}\n"
                     "  - {embedding.adapt: true, embedding.adapt.epochs: 2}\n  - {embedding.adapt: false}\n")
    items = resolve_space(load_space(space))
    labels = [label for label, _, _ in items]
    assert labels == ["default", "adapt=true", "adapt=true, epochs=2"]  # adapt: false is the default itself
    default, plain, two = (cfg for _, _, cfg in items)
    assert plain.embedding == default.embedding  # the same config until materialize trains it
    assert two.embedding.adapt.epochs == 2.0


def test_every_shipped_corpus_space_has_the_second_encoder_and_adapted_candidates() -> None:
    """The default fuses the second encoder, so each space holds the index without it, and the adapted encoder
    with it (the default) and without it, and adapted on cloze pairs only."""
    for name in ("pydantic-docs", "scifact", "scifact-one-index", "srd", "sample-adapt"):
        configs = load_space(ROOT / "configs" / "tune" / f"{name}.yaml").configs
        assert {"retrieval.fusion.weights.vector2": 0} in configs, name
        assert {"embedding.adapt": True} in configs, name
        assert {"embedding.adapt": True, "retrieval.fusion.weights.vector2": 0} in configs, name
        cloze = {"embedding.adapt": True, "embedding.adapt.pairs": ["cloze"]}  # for corpora whose headers are names
        assert cloze in configs and adapted.wants_adapt(cloze), name
        if name != "sample-adapt":  # the swapped pair: bge-small's float form main, MiniLM adapted as the view
            swapped = {"embedding.model": "bge-small-en-v1.5", "embedding.backend": "torch",
                       "retrieval.views.second_model": "all-MiniLM-L6-v2", "retrieval.views.adapt": True}
            assert swapped in configs and adapted.wants_view_adapt(swapped), name
            # E30: the rerank stage on top of the float view and of the swapped pair
            assert {"retrieval.views.second_backend": "torch", "retrieval.rerank.enabled": True} in configs, name
            assert {**swapped, "retrieval.rerank.enabled": True} in configs, name
            # E31: the rerank stage on top of the adapted encoder with the float view
            e31 = {"embedding.adapt": True, "retrieval.views.second_backend": "torch", "retrieval.rerank.enabled": True}
            assert e31 in configs and adapted.wants_adapt(e31), name
    assert {"retrieval.fusion.weights.vector2": 0} in load_space(ROOT / "configs" / "tune" / "first.yaml").configs


def test_materialize_trains_only_adapted_candidates_into_the_default_folder(make_config, monkeypatch) -> None:
    from ragrig.retrieval.adapt import run

    cfg = make_config()
    seen: list[tuple[str, object]] = []

    class Result:
        model = "/models/sample-k-v000001-abc"

    def fake_adapt(c, out, *, progress, executor):
        seen.append(("adapt", out))
        return Result()

    monkeypatch.setattr(run, "adapt", fake_adapt)
    calls: list[str] = []

    class Recording(Executor):
        def call(self, name, fn, *args):
            calls.append(name)

    items = [("default", {}, cfg), ("adapt=true", {"embedding.adapt": True}, cfg)]
    out = adapted.materialize(items, Recording(), progress=False)
    assert out[0][2] is cfg
    assert out[1][2].embedding.model == "/models/sample-k-v000001-abc"
    assert out[1][2].index_key() != cfg.index_key()  # its own index, embedded by the adapted model
    assert calls == ["ingest"] and seen == [("adapt", None)]  # out=None: the cached default folder


SWAPPED = ["embedding.model=bge-small-en-v1.5", "embedding.backend=torch", "retrieval.views.second_model=all-MiniLM-L6-v2"]


def test_an_adapted_view_is_trained_on_the_index_its_model_makes_as_the_main_encoder(make_config, monkeypatch) -> None:
    """``retrieval.views.adapt: true``: the view's model (MiniLM) is trained on MiniLM's own index, which is the
    default config's: the same folder ``embedding.adapt: true`` makes there; the candidate keeps its main encoder
    and gets the folder as its view."""
    from ragrig.retrieval.adapt import run

    cfg = make_config(None, *SWAPPED)
    trained: list[object] = []

    class Result:
        model = "/models/sample-k-v000001-abc"

    def fake_adapt(c, out, *, progress, executor):
        trained.append(c)
        return Result()

    monkeypatch.setattr(run, "adapt", fake_adapt)
    ingested: list[str] = []

    class Recording(Executor):
        def call(self, name, fn, *args):
            ingested.append(args[0].index_key())

    out = adapted.materialize([("v", {"retrieval.views.adapt": True}, cfg)], Recording(), progress=False)
    (src,) = trained
    default = make_config()
    assert src.embedding.model == "all-MiniLM-L6-v2" and src.embedding.backend == "auto"
    assert src.index_key() == default.index_key() == ingested[0]  # the default's index: E13's folder is reused
    assert src.embedding.adapt == cfg.embedding.adapt
    got = out[0][2]
    assert got.embedding == cfg.embedding and got.index_key() == cfg.index_key()  # its own main encoder and index
    assert got.retrieval.views.second_model == "/models/sample-k-v000001-abc"
    assert got.retrieval.views.second_backend == "auto"
    both = adapted.materialize([("b", {"retrieval.views.adapt": True, "embedding.adapt": True}, cfg)], Recording(),
                               progress=False)[0][2]
    assert [c.embedding.model for c in trained[1:]] == ["all-MiniLM-L6-v2", "bge-small-en-v1.5"]  # the view, then main
    assert both.embedding.model == both.retrieval.views.second_model == "/models/sample-k-v000001-abc"


def test_an_adapted_view_candidate_is_kept_apart_and_checked_before_any_work(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    swapped = "embedding.model: bge-small-en-v1.5, embedding.backend: torch, retrieval.views.second_model: all-MiniLM-L6-v2"
    space.write_text(f"name: s\nset: [eval.ragas=false]\nconfigs:\n  - {{{swapped}}}\n"
                     f"  - {{{swapped}, retrieval.views.adapt: true}}\n")
    items = resolve_space(load_space(space))
    assert len(items) == 3 and adapted.wants_view_adapt(items[2][1]) and not adapted.wants_view_adapt(items[1][1])
    assert items[2][0].endswith("second_model=all-MiniLM-L6-v2, views.adapt=true")
    assert items[1][2] == items[2][2]  # one config until materialize trains the view
    for bad, why in [("retrieval.views.second_model: null, retrieval.fusion.weights.vector2: 0",
                      "needs retrieval.views.second_model"),
                     ("retrieval.views.second_backend: onnx", "runs as ONNX under retrieval.views.second_backend: "
                                                              "onnx; set it to torch"),
                     ("retrieval.views.second_model: bge-small-en-v1.5", "'bge-small-en-v1.5'.* runs as ONNX under "
                                                                          "retrieval.views.second_backend: auto"),
                     ("retrieval.fusion.weights.vector2: 0", "the view is not fused"),
                     ("retrieval.views.second_model: BAAI/bge-small-en-v1.5",  # adapt's refusal, about the view
                      "trains retrieval.views.second_model: .*runs on the onnx backend \\(set "
                      "retrieval.views.second_model to a torch model")]:
        space.write_text(f"name: s\nset: [eval.ragas=false]\nconfigs:\n  - {{retrieval.views.adapt: true, {bad}}}\n")
        with pytest.raises(InputError, match=f"candidate .*retrieval.views.adapt: true.*{why}"):
            resolve_space(load_space(space))


def test_an_adapted_winner_is_written_with_the_folders_it_was_evaluated_with(tmp_path: Path, monkeypatch) -> None:
    """The written config of an adapted winner names its trained folders (the base model is not what won; and
    ``embedding.adapt: true`` is no config value a user could --set)."""
    from types import SimpleNamespace

    import yaml
    from ragrig.eval.sweep.result import SweepResult
    from ragrig.eval.testset import load_testset
    from ragrig.eval.tune import run as tune_run

    testset = ROOT / "datasets" / "testsets" / "sample.yaml"
    cases = load_testset(testset)
    space = tmp_path / "space.yaml"
    space.write_text(f"name: s\nset: [eval.ragas=false, mlflow.enabled=false]\ntestsets: [{testset}]\n"
                     "configs:\n  - {embedding.adapt: true, retrieval.views.adapt: true, "
                     "retrieval.views.second_model: all-MiniLM-L6-v2}\nmetric: ndcg@10\nfolds: 5\n")
    folder = "/models/sample-k-v000001-abc"
    trained = {"retrieval.views.second_model": folder + "-view", "retrieval.views.second_backend": "auto",
               "embedding.model": folder}

    def fake_sweep(spec, extra=None, *, configs, on_report, **kw):
        for label, ov, _ in configs:
            report = SimpleNamespace(testset=cases.name, per_query=[
                {"id": c.id, "metrics": {"ndcg@10": 0.9 if ov else 0.5}} for c in cases.cases])
            on_report(SimpleNamespace(label=label, index_key="k", seconds=1.0, run_id=None), report)
        return SweepResult("s", "ndcg@10", trained={configs[1][0]: trained})

    monkeypatch.setattr(tune_run, "run_sweep", fake_sweep)
    out = tmp_path / "tuned.yaml"
    result = tune_run.run_tune(load_space(space), write=out, log_mlflow=False)
    assert result.significant and result.winner_trained == trained
    text = out.read_text()
    cfg = yaml.safe_load(text)
    assert cfg["embedding"]["model"] == folder
    assert cfg["retrieval"]["views"] == {"second_model": folder + "-view", "second_backend": "auto"}
    assert f"# Trained by `ragrig adapt` (set below): --set retrieval.views.second_model={folder}-view" in text
    # the head's overrides are runnable: the flags are not settings, the folders are
    overrides = next(line for line in text.splitlines() if line.startswith("# Overrides: "))
    assert "adapt=true" not in overrides and f"--set embedding.model={folder}" in overrides
    assert load_config(overrides=[o.strip() for o in overrides.removeprefix("# Overrides: ").split("--set ") if o.strip()]
                       ).embedding.model == folder
