"""Load the resolved config: embedded ``default.yaml`` < ``--config FILE`` < ``--set a.b=value``.

Relative paths are resolved against the directory of the file that set them (``--set`` values against the
current directory), so a config works from any CWD. Every problem is one InputError naming the file, line
and key.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from ragrig.configs.errors import InputError
from ragrig.configs.models import RENAMED, RagrigConfig
from ragrig.configs.yamlio import LocatedYaml, YamlBombError, load_yaml, safe_load_bounded

DEFAULT_CONFIG = Path(__file__).with_name("default.yaml")

PATH_FIELDS: list[tuple[str, ...]] = [
    ("home",),
    ("corpus", "path"),
    ("retrieval", "synonyms"),
]
LIST_PATH_FIELDS: list[tuple[str, ...]] = [("eval", "testsets")]


def _resolve_paths(layer: dict[str, Any], base: Path) -> None:
    def get_parent(keys: tuple[str, ...]) -> dict[str, Any] | None:
        node: Any = layer
        for k in keys[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(k), dict):
                return None
            node = node[k]
        return node if isinstance(node, dict) else None

    for keys in PATH_FIELDS:
        parent = get_parent(keys)
        if parent is not None and isinstance(parent.get(keys[-1]), str) and parent[keys[-1]].strip():
            parent[keys[-1]] = _absolute(parent[keys[-1]], base)  # an empty path stays empty: validation names it
    for keys in LIST_PATH_FIELDS:
        parent = get_parent(keys)
        if parent is not None and isinstance(parent.get(keys[-1]), list):
            parent[keys[-1]] = [_absolute(p, base) if isinstance(p, str) else p for p in parent[keys[-1]]]


def _absolute(value: str, base: Path) -> str:
    expanded = os.path.expandvars(os.path.expanduser(value))
    p = Path(expanded)
    return str(p if p.is_absolute() else (base / p).resolve())


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def parse_override(item: str) -> tuple[list[str], Any]:
    """``retrieval.rrf_k=40`` -> (["retrieval", "rrf_k"], 40); the value is parsed as a YAML scalar/list."""
    if "=" not in item:
        raise InputError(f"--set {item!r}: expected KEY.PATH=VALUE")
    key, raw = item.split("=", 1)
    keys = [k.strip() for k in key.split(".")]
    if not all(keys):
        raise InputError(f"--set {item!r}: empty key segment in {key!r}")
    try:
        value = safe_load_bounded(raw) if raw.strip() else ""
    except YamlBombError as exc:
        raise InputError(f"--set {item!r}: {exc}") from None
    except yaml.YAMLError:
        value = raw
    return keys, value


ADAPT_KEY = "embedding.adapt"
VIEW_ADAPT_KEY = "retrieval.views.adapt"
CANDIDATE_FLAGS = {  # a tune/sweep candidate's training flags (eval/sweep/adapted.py): what each asks for, by hand
    ADAPT_KEY: "run `ragrig adapt` and --set embedding.model=<the folder it prints>",
    VIEW_ADAPT_KEY: "run `ragrig adapt --set embedding.model=<the view's model>` and --set "
                    "retrieval.views.second_model=<the folder it prints>",
}


def _apply_override(data: dict[str, Any], keys: list[str], value: Any, item: str) -> None:
    dotted = ".".join(keys)
    if dotted in CANDIDATE_FLAGS and not isinstance(value, dict):  # embedding.adapt's own settings are a mapping
        raise InputError(f"--set {item!r}: {dotted}: true/false is a candidate flag in a tune space or sweep file, "
                         f"not a setting; by hand: {CANDIDATE_FLAGS[dotted]} (docs/adapt.md)")
    node: Any = data
    model: type[BaseModel] | None = RagrigConfig
    for i, k in enumerate(keys):
        fields = model.model_fields if model is not None else {}
        if model is not None and k not in fields:
            dotted = ".".join(keys[: i + 1])
            if dotted in RENAMED:
                raise InputError(f"--set {item!r}: {dotted} was renamed: it is now {RENAMED[dotted]}")
            raise InputError(f"--set {item!r}: unknown key '{dotted}'; known here: {sorted(fields)}")
        ann = fields[k].annotation if model is not None else None
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if i == len(keys) - 1:
            node[k] = value
        else:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]


_TYPE_TAGS = {"int", "str", "float", "bool", "none", "list", "dict"}


def _union_branch(part: Any) -> bool:
    """Whether a location part is the tag pydantic gives one member of a union (``constrained-int``,
    ``literal['auto']``, ``int``), not a config key (no key of ragrig's config looks like one)."""
    return isinstance(part, str) and (part in _TYPE_TAGS or any(c in part for c in "-[("))


def _merge_unions(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One error per value a union refused: ``shards: 0`` fails both ``int >= 1`` and ``'auto'``; pydantic says
    so twice, the user reads one line ("Input should be greater than or equal to 1 or 'auto'")."""
    out: list[dict[str, Any]] = []
    for err in errors:
        loc = tuple(err["loc"])
        if loc and _union_branch(loc[-1]):
            err = {**err, "loc": loc[:-1]}
            prev = out[-1] if out else None
            if prev is not None and tuple(prev["loc"]) == loc[:-1] and prev.get("input") == err.get("input"):
                prev["msg"] = f"{prev['msg']} or {err['msg'].removeprefix('Input should be ')}"
                continue
        out.append(dict(err))
    return out


def _format_validation(exc: ValidationError, sources: list[tuple[str, LocatedYaml | None]]) -> str:
    msgs = []
    for err in _merge_unions(exc.errors()):
        loc = tuple(err["loc"])
        dotted = ".".join(str(p) for p in loc)
        where = "config"
        for label, located in reversed(sources):
            if located is not None and located.lines.get(loc[:1]) is not None and _has_path(located.data, loc):
                where = located.where(loc)
                break
            key = label[6:].split("=", 1)[0]
            inside = dotted == key or dotted.startswith(key + ".") or key.startswith(dotted + ".")  # or set under it
            if located is None and label.startswith("--set") and inside:
                where = label
                break
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        value = err.get("input")
        shown = "" if err["type"] == "extra_forbidden" or isinstance(value, dict) else f" (got {value!r})"
        msgs.append(f"{where}: {dotted}: {msg}{shown}")
    return "invalid config: " + msgs[0] if len(msgs) == 1 else "invalid config:\n  " + "\n  ".join(msgs)


def _has_path(data: Any, loc: tuple[Any, ...]) -> bool:
    node = data
    for k in loc:
        if isinstance(node, dict) and k in node:
            node = node[k]
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            node = node[k]
        else:
            return False
    return True


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> RagrigConfig:
    """Build the resolved config: embedded defaults, then ``path``, then ``--set`` overrides."""
    sources: list[tuple[str, LocatedYaml | None]] = []
    merged: dict[str, Any] = {}
    files = [DEFAULT_CONFIG] + ([Path(path)] if path else [])
    for f in files:
        located = load_yaml(f)
        if located.data is None:
            located.data = {}
        if not isinstance(located.data, dict):
            raise InputError(f"{f}: a config must be a YAML mapping, got {type(located.data).__name__}")
        layer = copy.deepcopy(located.data)
        _resolve_paths(layer, f.resolve().parent)
        merged = _deep_merge(merged, layer)
        sources.append((str(f), located))
    for item in overrides or []:
        keys, value = parse_override(item)
        layer: dict[str, Any] = {}
        _apply_override(layer, keys, value, item)
        _resolve_paths(layer, Path.cwd())
        merged = _deep_merge(merged, layer)
        sources.append((f"--set {item}", None))
    try:
        return RagrigConfig.model_validate(merged)
    except ValidationError as exc:
        raise InputError(_format_validation(exc, sources)) from None
