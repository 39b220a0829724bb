"""Adapted candidates in a sweep or a tune space: ``embedding.adapt: true`` in a candidate's overrides (beside any
``embedding.adapt.*`` recipe key) means "this config's encoder fine-tuned on its own published index by
``ragrig adapt``". The key is not a config value: ``resolve`` leaves it out of the config, and ``materialize``
(run before any group is evaluated) ingests the base index when needed, trains once into the default folder
(``<home>/models/<index>-<version>-<recipe hash>``; a later sweep or tune finds it there and reuses it) and points
the candidate's ``embedding.model`` at it."""

from __future__ import annotations

from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.executor import Executor

ADAPT_KEY = "embedding.adapt"


def wants_adapt(overrides: dict[str, Any]) -> bool:
    return overrides.get(ADAPT_KEY) is True


def config_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """The overrides that are config values (``embedding.adapt: true/false`` is a candidate flag, not one)."""
    return {k: v for k, v in overrides.items() if not (k == ADAPT_KEY and isinstance(v, bool))}


def with_model(cfg: RagrigConfig, folder: str) -> RagrigConfig:
    """``cfg`` with ``embedding.model`` set to ``folder`` (validated like ``--set embedding.model=…``)."""
    out = cfg.model_copy(deep=True)
    out.embedding.model = folder
    return out


def materialize(items: list[tuple[str, dict[str, Any], RagrigConfig]], executor: Executor,
                progress: bool) -> list[tuple[str, dict[str, Any], RagrigConfig]]:
    """``items`` with every adapted candidate's encoder trained (or found) and set."""
    from ragrig.retrieval.adapt.run import adapt

    out = []
    for label, ov, cfg in items:
        if wants_adapt(ov):
            executor.call("ingest", _ingest, cfg, progress)  # the base index adapt learns from (a no-op when current)
            cfg = with_model(cfg, adapt(cfg, None, progress=progress, executor=executor).model)
        out.append((label, ov, cfg))
    return out


def _ingest(cfg: RagrigConfig, progress: bool) -> Any:
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    return IngestPipeline(cfg, progress=progress).run()
