"""A flow's config: the one the caller already loaded (the CLI validates it before Prefect starts and passes
it on), else loaded from the ``config_path`` / ``overrides`` parameters that deployments in prefect.yaml and
event triggers pass, which arrive as text when templated."""

from __future__ import annotations

import json

from ragrig.configs.load import load_config
from ragrig.configs.models import RagrigConfig


def flow_config(
    config: RagrigConfig | None, config_path: str | None, overrides: list[str] | str | None
) -> RagrigConfig:
    if config is not None:
        return config
    if config_path in ("", "None"):  # an event payload without a config path
        config_path = None
    if isinstance(overrides, str):  # a templated trigger parameter arrives as text
        overrides = json.loads(overrides) if overrides.strip() else []
    return load_config(config_path, overrides)
