"""Adapted candidates in a sweep or a tune space: ``embedding.adapt: true`` in a candidate's overrides (beside any
``embedding.adapt.*`` recipe key) means "this config's encoder fine-tuned on its own published index by
``ragrig adapt``". The key is not a config value: ``resolve`` leaves it out of the config, and ``materialize``
(run before any group is evaluated) ingests the base index when needed, trains once into the default folder
(``<home>/models/<index>-<version>-<recipe hash>``; a later sweep or tune finds it there and reuses it) and points
the candidate's ``embedding.model`` at it.

``retrieval.views.adapt: true`` does the same for the second encoder's view: the view's model
(``retrieval.views.second_model``, a torch model) trained by the same recipe on the index it would have as the main
encoder (``view_source``: so MiniLM adapted for a view is the very folder ``embedding.adapt: true`` makes from the
default config, found, not trained twice), and set as the candidate's ``retrieval.views.second_model``. It lets a
space hold "another main encoder beside the adapted one" (docs/adapt.md E29: bge-small's float form as the main
encoder, with its own 510-token chunks, and the adapted MiniLM as the view)."""

from __future__ import annotations

from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.load import ADAPT_KEY, CANDIDATE_FLAGS, VIEW_ADAPT_KEY
from ragrig.configs.models import EmbeddingConfig, RagrigConfig
from ragrig.retrieval.executor import Executor

FLAGS = tuple(CANDIDATE_FLAGS)


def wants_adapt(overrides: dict[str, Any]) -> bool:
    return overrides.get(ADAPT_KEY) is True


def wants_view_adapt(overrides: dict[str, Any]) -> bool:
    return overrides.get(VIEW_ADAPT_KEY) is True


def flags(overrides: dict[str, Any]) -> str:
    """What training a candidate asks for (two candidates of one config differ once trained)."""
    return f"{wants_adapt(overrides)}|{wants_view_adapt(overrides)}"


def config_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """The overrides that are config values (``embedding.adapt`` and ``retrieval.views.adapt`` true/false are
    candidate flags, not ones)."""
    return {k: v for k, v in overrides.items() if not (k in FLAGS and isinstance(v, bool))}


def check_view_adapt(cfg: RagrigConfig) -> None:
    """A candidate's ``retrieval.views.adapt: true`` can be trained and is fused; else one line naming why."""
    v = cfg.retrieval.views
    if not v.second_model:
        raise InputError(f"{VIEW_ADAPT_KEY}: true needs retrieval.views.second_model (the view's model to train)")
    if cfg.retrieval.fusion.weights.get("vector2", 0.0) <= 0:
        raise InputError(f"{VIEW_ADAPT_KEY}: true, but retrieval.fusion.weights.vector2 is 0: the view is not fused")
    from ragrig.retrieval.adapt.run import int8_by_default, torch_model

    emb = _view_embedding(cfg)
    if emb.backend == "onnx" or int8_by_default(emb):
        raise InputError(f"{VIEW_ADAPT_KEY}: true trains retrieval.views.second_model ({v.second_model!r}), which "
                         f"runs as ONNX under retrieval.views.second_backend: {v.second_backend}; set it to torch")
    try:
        torch_model(cfg.model_copy(update={"embedding": emb}))
    except InputError as exc:  # adapt's refusal, about the setting that names the view's model
        why = as_view_message(str(exc).removeprefix("embedding.model: "))
        raise InputError(f"{VIEW_ADAPT_KEY}: true trains retrieval.views.second_model: {why}") from None


def as_view_message(message: str) -> str:
    """A refusal about the main encoder's settings, said of the second view's (the view's model is resolved as a
    main encoder: ``_view_embedding``)."""
    return message.replace("embedding.model", "retrieval.views.second_model").replace(
        "embedding.backend", "retrieval.views.second_backend")


def _view_embedding(cfg: RagrigConfig) -> EmbeddingConfig:
    """The view's model as a main encoder: the settings the view runs it with (the recipe kept)."""
    from ragrig.retrieval.ingest.views import second_embedding

    v = cfg.retrieval.views
    return second_embedding(cfg.embedding, str(v.second_model), v.second_backend).model_copy(deep=True)


def view_source(cfg: RagrigConfig) -> RagrigConfig:
    """The config whose main encoder is ``cfg``'s view model: the index ``ragrig adapt`` trains the view's model
    on."""
    check_view_adapt(cfg)
    out = cfg.model_copy(deep=True)
    out.embedding = _view_embedding(cfg)
    out.retrieval.fusion.weights = {"bm25": 1.0, "vector": 1.0, "vector2": 0.0}  # its own view is not needed
    return out


def with_model(cfg: RagrigConfig, folder: str) -> RagrigConfig:
    """``cfg`` with ``embedding.model`` set to ``folder`` (validated like ``--set embedding.model=…``)."""
    out = cfg.model_copy(deep=True)
    out.embedding.model = folder
    return out


def with_view(cfg: RagrigConfig, folder: str) -> RagrigConfig:
    """``cfg`` with the second encoder's view made by the model at ``folder``."""
    out = cfg.model_copy(deep=True)
    out.retrieval.views.second_model = folder
    out.retrieval.views.second_backend = "auto"  # a folder of torch weights runs on torch
    return out


def trained_settings(overrides: dict[str, Any], cfg: RagrigConfig) -> dict[str, str]:
    """The settings ``materialize`` gave a candidate (its trained folders), as ``--set`` keys: what a config
    written for it must hold (``embedding.adapt: true`` is no config value, and the base model is not the one
    evaluated)."""
    out = {}
    if wants_view_adapt(overrides):
        out["retrieval.views.second_model"] = str(cfg.retrieval.views.second_model)
        out["retrieval.views.second_backend"] = cfg.retrieval.views.second_backend
    if wants_adapt(overrides):
        out["embedding.model"] = cfg.embedding.model
    return out


def runnable(overrides: dict[str, Any], trained: dict[str, str]) -> dict[str, Any]:
    """A candidate's overrides as ``--set`` can take them: its config values, then what training set (the
    candidate flags are not settings)."""
    return {**config_overrides(overrides), **trained}


def with_trained(cfg: RagrigConfig, settings: dict[str, str]) -> RagrigConfig:
    """``cfg`` (a candidate as resolved) with the settings ``trained_settings`` recorded for it."""
    if "retrieval.views.second_model" in settings:
        cfg = with_view(cfg, settings["retrieval.views.second_model"])
    if "embedding.model" in settings:
        cfg = with_model(cfg, settings["embedding.model"])
    return cfg


def materialize(items: list[tuple[str, dict[str, Any], RagrigConfig]], executor: Executor,
                progress: bool) -> list[tuple[str, dict[str, Any], RagrigConfig]]:
    """``items`` with every adapted candidate's encoder (and adapted view) trained (or found) and set."""
    from ragrig.retrieval.adapt.run import adapt

    out = []
    for label, ov, cfg in items:
        if wants_view_adapt(ov):
            src = view_source(cfg)
            executor.call("ingest", _ingest, src, progress)
            cfg = with_view(cfg, adapt(src, None, progress=progress, executor=executor).model)
        if wants_adapt(ov):
            executor.call("ingest", _ingest, cfg, progress)  # the base index adapt learns from (a no-op when current)
            cfg = with_model(cfg, adapt(cfg, None, progress=progress, executor=executor).model)
        out.append((label, ov, cfg))
    return out


def _ingest(cfg: RagrigConfig, progress: bool) -> Any:
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    return IngestPipeline(cfg, progress=progress).run()
