"""An adapted candidate in a tune space (``embedding.adapt: true``): validated with the others, kept apart from
the default it equals before training, and trained (or found) into the default folder before any evaluation."""

from __future__ import annotations

from pathlib import Path

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
