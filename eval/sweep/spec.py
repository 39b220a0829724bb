"""A sweep file: a base config plus a grid and/or an explicit list of overrides (``SweepSpec``), expanded into
one (label, overrides) pair per config and validated into configs before any work (``resolve``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from ragrig.configs.errors import InputError
from ragrig.configs.load import VIEW_ADAPT_KEY, load_config
from ragrig.configs.models import RagrigConfig
from ragrig.configs.yamlio import load_yaml
from ragrig.eval.metrics import HEADLINE, METRICS
from ragrig.eval.sweep.adapted import config_overrides
from ragrig.eval.sweep.checks import check_candidate, check_flags, check_models


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    base: str | None = None  # a config file, relative to the sweep file
    set: list[str] = Field(default_factory=list)  # overrides applied to every config
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    configs: list[dict[str, Any]] = Field(default_factory=list)  # explicit override sets
    metric: str = HEADLINE[0]  # the one the best config is picked by
    testsets: list[str] = Field(default_factory=list)  # default: the base config's eval.testsets
    path: str | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _something(self) -> SweepSpec:
        if not self.grid and not self.configs:
            raise ValueError("a sweep needs a 'grid' and/or a list of 'configs'")
        for k, v in self.grid.items():
            if not isinstance(v, list) or not v:
                raise ValueError(f"grid.{k}: needs a non-empty list of values")
        return self

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, metric: str) -> str:
        name, _, k = metric.partition("@")
        if name not in METRICS or not k.isdigit() or int(k) < 1:
            raise ValueError(f"unknown metric {metric!r}; use one of {list(METRICS)} at a k, e.g. ndcg@10")
        return metric


def load_sweep(path: str | Path, model: type[SweepSpec] | None = None) -> SweepSpec:
    """A sweep file (or, with ``model``, a file of a richer shape built on it: ``ragrig tune``'s space)."""
    p = Path(path)
    located = load_yaml(p)
    try:
        spec = (model or SweepSpec).model_validate(located.data or {})
    except ValidationError as exc:
        raise located.validation_error(exc, f"invalid {'sweep' if model is None else 'space'} file") from None
    base_dir = p.resolve().parent
    if spec.base:
        spec.base = str((base_dir / spec.base).resolve())
    spec.testsets = [str((base_dir / t).resolve()) if not Path(t).is_absolute() else t for t in spec.testsets]
    spec.path = str(p)
    return spec


def fmt_value(v: Any) -> str:
    """A value as a --set right-hand side (YAML flow style)."""
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("...").strip()


def describe(overrides: dict[str, Any]) -> str:
    """Overrides as ``--set`` flags, values in YAML's spelling (``true``, not Python's ``True``)."""
    return " ".join(f"--set {k}={fmt_value(v)}" for k, v in overrides.items()) or "(the default)"


GENERIC = frozenset({"enabled", "weight"})  # last segments that do not say what they switch or weigh


def _short(key: str) -> str:
    """A key in a label: its last segment, or its last two where the last alone says nothing (``rerank.enabled``,
    ``rerank.weight``; ``views.adapt`` for the view's flag, not to read as embedding.adapt)."""
    if key == VIEW_ADAPT_KEY:
        return "views.adapt"
    parts = key.split(".")
    return ".".join(parts[-2:]) if parts[-1] in GENERIC else parts[-1]


def expand(spec: SweepSpec) -> list[tuple[str, dict[str, Any]]]:
    """(label, overrides) for every config: the grid's cartesian product, then the explicit list; the labels
    distinct (rows, trained folders and MLflow runs are keyed by them)."""
    out: list[tuple[str, dict[str, Any]]] = []
    keys = list(spec.grid)
    for values in itertools.product(*(spec.grid[k] for k in keys)) if keys else []:
        ov = dict(zip(keys, values))
        out.append((", ".join(f"{_short(k)}={fmt_value(v)}" for k, v in ov.items()), ov))
    for ov in spec.configs:
        out.append((", ".join(f"{_short(k)}={fmt_value(v)}" for k, v in ov.items()) or "base", dict(ov)))
    seen: set[str] = set()
    uniq = []
    for label, ov in out:
        key = repr(sorted(ov.items()))
        if key not in seen:
            seen.add(key)
            uniq.append((label, ov))
    labels = [label for label, _ in uniq]
    if len(set(labels)) < len(labels):  # short labels (last key segment) collided: the whole keys name each config
        uniq = [(", ".join(f"{k}={fmt_value(v)}" for k, v in ov.items()) or label, ov) for label, ov in uniq]
    return uniq


Resolved = list[tuple[str, dict[str, Any], RagrigConfig]]
"""(label, overrides, config) for every config of a sweep, in ``expand`` order."""


def resolve(spec: SweepSpec, extra: list[str] | None = None) -> Resolved:
    """Validate every config before any work (a bad value fails the sweep at once, naming the config; a bad base
    or ``set``, which every config shares, names those), and every model the configs name (``checks.py``)."""
    try:
        load_config(spec.base, [*spec.set, *(extra or [])])
    except InputError as exc:
        raise InputError(f"the base config ({spec.base or 'the defaults'}, with set): {exc}") from None
    out = []
    for label, ov in expand(spec):
        sets = [*spec.set, *(extra or []), *(f"{k}={fmt_value(v)}" for k, v in config_overrides(ov).items())]
        try:
            check_flags(ov)
            cfg = load_config(spec.base, sets)
            check_candidate(ov, cfg)
        except InputError as exc:
            raise InputError(f"sweep config '{label}': {exc}") from None
        out.append((label, ov, cfg))
    check_models(out)
    return out
