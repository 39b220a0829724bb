"""A tune space: a sweep file (``base``, ``set``, ``grid``, ``configs``, ``metric``, ``testsets``) plus how to
validate a choice among its candidates (``folds``, ``seed``, ``alpha``, ``stratify``).

The default (the base config with ``set``, no overrides) is always a candidate, labelled ``default``, first:
it is what a choice has to beat, and a tie keeps it. A candidate whose resolved config equals one already listed
(``weights.vector: 1.0`` when that is the default) is evaluated once, under the first label. Every candidate is validated before any work; a bad key or
value is one line naming the space file, the candidate and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field
from ragrig.configs.errors import InputError
from ragrig.configs.load import DEFAULT_CONFIG
from ragrig.eval.sweep.adapted import flags
from ragrig.eval.sweep.spec import Resolved, SweepSpec, load_sweep, resolve

DEFAULT_LABEL = "default"
BUILT_IN = DEFAULT_CONFIG.parent / "tune" / "first.yaml"
"""The space ``ragrig tune`` tunes when given no FILE: the options docs/tune.md recommends first, on one index."""


class TuneSpace(SweepSpec):
    folds: int = Field(5, ge=2, le=100, description="k of the k-fold cross-validation (cases, stratified)")
    seed: int = Field(0, ge=0, description="the fold assignment's seed (and the bootstrap's)")
    alpha: float = Field(0.05, gt=0, lt=1, description="a winner is written only when its held-out gain's p < alpha")
    stratify: bool = Field(True, description="folds stratified by each case's first tag (its kind)")
    bootstrap: int = Field(2000, ge=100, le=100_000, description="resamples for the confidence intervals")


def load_space(path: str | Path) -> TuneSpace:
    spec = load_sweep(path, TuneSpace)  # its metric checked as a sweep's
    assert isinstance(spec, TuneSpace)
    return spec


def with_options(spec: TuneSpace, **options: Any) -> TuneSpace:
    """The space with command-line options (folds, seed, alpha, stratify, base) over its own, validated: a bad
    one is one line naming the option and the value."""
    from pydantic import ValidationError

    try:
        out = TuneSpace.model_validate({**spec.model_dump(), **options})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise InputError(f"--{field}={options.get(field)!r}: {err['msg']}") from None
    out.path = spec.path
    return out


def with_default(spec: TuneSpace) -> TuneSpace:
    """The space with the default (no overrides) as its first explicit candidate."""
    configs = [{}, *(c for c in spec.configs if c)]
    return spec.model_copy(update={"configs": configs})


def resolve_space(spec: TuneSpace, extra: list[str] | None = None) -> Resolved:
    """(label, overrides, config) of every candidate, the default first, each validated before any work."""
    spec = with_default(spec)
    try:
        items = resolve(spec, extra)
    except InputError as exc:
        raise InputError(f"{spec.path or 'space'}: {str(exc).replace('sweep config', 'candidate', 1)}") from None
    default = [it for it in items if not it[1]]
    out = [(DEFAULT_LABEL, {}, default[0][2])]
    seen = {default[0][2].model_dump_json() + "|" + flags({})}
    for it in items:  # a candidate that resolves to a config already listed (the default's own values) is left out
        key = it[2].model_dump_json() + "|" + flags(it[1])  # an adapted candidate differs once trained
        if it[1] and key not in seen:
            seen.add(key)
            out.append(it)
    return out


def candidate_keys(items: Resolved) -> list[str]:
    keys: list[str] = []
    for _, ov, _ in items:
        keys += [k for k in ov if k not in keys]
    return keys


