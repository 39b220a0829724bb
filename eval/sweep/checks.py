"""What every sweep config and tune candidate must pass before any work (``spec.resolve`` calls these): its
training flags hold booleans and name a model adapt can train, and every model it names is installed or a folder
that exists. A bad one is one line naming the config, not an ingest, a training or an evaluation failing halfway
through the list (issue 36's probes: an endpoint encoder refused only after its ingest, a missing folder only after
the default was evaluated)."""

from __future__ import annotations

from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.load import ADAPT_KEY, CANDIDATE_FLAGS
from ragrig.configs.models import RagrigConfig
from ragrig.eval.sweep.adapted import as_view_message, check_view_adapt, wants_adapt, wants_view_adapt


def check_flags(overrides: dict[str, Any]) -> None:
    """A candidate flag is true or false (``embedding.adapt`` may also be a mapping: the recipe's own keys)."""
    for key in CANDIDATE_FLAGS:
        recipe = key == ADAPT_KEY and isinstance(overrides.get(key), dict)
        if key in overrides and not isinstance(overrides[key], bool) and not recipe:
            raise InputError(f"{key}: {overrides[key]!r} is not true or false (the candidate flag: true trains "
                             "this candidate's encoder with `ragrig adapt`)")


def check_candidate(overrides: dict[str, Any], cfg: RagrigConfig) -> None:
    """The config a candidate's flags ask to train can be trained (``check_flags`` ran before it was loaded): the
    refusals ``ragrig adapt`` itself gives."""
    from ragrig.retrieval.adapt.run import torch_model

    if wants_adapt(overrides):
        torch_model(cfg)
    if wants_view_adapt(overrides):
        check_view_adapt(cfg)


def check_models(items: list[tuple[str, dict[str, Any], RagrigConfig]]) -> None:
    """Every config's encoder, second encoder and cross-encoder is installed (or a folder that exists); a missing
    one is one line naming the config (``sweep config '<label>': …``)."""
    from ragrig.retrieval.encoders.cross_encoder import model_folder
    from ragrig.retrieval.encoders.resolve import resolve
    from ragrig.retrieval.ingest.views import second_embedding

    seen: set[str] = set()
    for label, _, cfg in items:
        try:
            e = cfg.embedding
            if e.backend != "openai" and e.model_dump_json() not in seen:
                seen.add(e.model_dump_json())
                resolve(e)
            v = cfg.retrieval.views
            if v.second_model and cfg.retrieval.fusion.weights.get("vector2", 0.0) > 0:
                second = second_embedding(e, str(v.second_model), v.second_backend)
                if second.model_dump_json() not in seen:
                    seen.add(second.model_dump_json())
                    try:
                        resolve(second)
                    except InputError as exc:  # resolve speaks of the main encoder's keys
                        raise InputError(as_view_message(str(exc))) from None
            if cfg.retrieval.rerank.enabled:
                model_folder(cfg.retrieval.rerank.model)
        except InputError as exc:
            raise InputError(f"sweep config '{label}': {exc}") from None
