"""The base of every config level (``Strict``): unknown keys, NaN and infinities, and booleans where a number
belongs are errors. Its own module so that each section's module (``models.py``, ``retrieval.py``) builds on it."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


def _wants_number(annotation: Any) -> bool:
    """int or float, alone, optional, or as the items of a list or the values of a dict (never bool itself)."""
    if annotation in (int, float):
        return True
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (list, dict):
        return bool(args) and _wants_number(args[-1])
    return origin in (typing.Union, types.UnionType) and bool(args) and bool not in args and all(
        _wants_number(a) for a in args)


def _has_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, list):
        return any(isinstance(v, bool) for v in value)
    if isinstance(value, dict):
        return any(isinstance(v, bool) for v in value.values())
    return False


class Strict(BaseModel):
    """Every config level: unknown keys, NaN and infinities, and booleans where a number belongs
    (pydantic would read ``top_k: true`` as 1) are errors."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and _has_bool(value) and _wants_number(field.annotation):
            raise ValueError("expected a number, got a boolean")
        return value
