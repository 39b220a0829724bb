"""Safe YAML loading that remembers where every key came from.

Errors in user files must name the file, the line and the field. PyYAML's
``safe_load`` throws the node positions away, so we compose the node tree
ourselves (still only safe constructors) and keep a map from key paths to lines.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ragrig.configs.errors import InputError

KeyPath = tuple[str | int, ...]


@dataclass
class LocatedYaml:
    """Parsed YAML data plus the 1-based line of every mapping key / list item."""

    path: Path
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line(self, keypath: KeyPath) -> int | None:
        """Line of the deepest known prefix of ``keypath`` (a bad value's key, or its parent)."""
        for n in range(len(keypath), -1, -1):
            found = self.lines.get(tuple(keypath[:n]))
            if found is not None:
                return found
        return None

    def where(self, keypath: KeyPath) -> str:
        line = self.line(keypath)
        return f"{self.path}:{line}" if line else str(self.path)

    def validation_error(
        self, exc: Any, title: str, unknown: str = "unknown key", context: Callable[[KeyPath], str] | None = None
    ) -> InputError:
        """A pydantic ValidationError on this file's data as one InputError: ``title: file:line:[context] field:
        message`` on one line, or the title and a line per problem when there are several."""
        msgs = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            ctx = context(loc) if context else ""
            dotted = ".".join(str(x) for x in loc) or "(top)"
            msg = unknown if err["type"] == "extra_forbidden" else err["msg"]
            msgs.append(f"{self.where(loc)}:{ctx} {dotted}: {msg}")
        if len(msgs) == 1:
            return InputError(f"{title}: {msgs[0]}")
        return InputError(f"{title}:\n  " + "\n  ".join(msgs))


def _walk(node: yaml.Node, prefix: KeyPath, lines: dict[KeyPath, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[prefix + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, prefix + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[prefix + (i,)] = item.start_mark.line + 1
            _walk(item, prefix + (i,), lines)


def _check_duplicate_keys(node: yaml.Node, path: Path) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise InputError(f"{path}:{line}: duplicate key '{key}' (first at line {seen[key]})")
            seen[key] = line
            _check_duplicate_keys(value_node, path)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicate_keys(item, path)


def parse_yaml_text(text: str, path: Path) -> LocatedYaml:
    """Parse YAML text with safe constructors only; syntax errors name file and line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"{path}{line}: malformed YAML: {problem}") from None
    except yaml.YAMLError as exc:  # pragma: no cover - non-marked errors are rare
        raise InputError(f"{path}: malformed YAML: {exc}") from None
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _check_duplicate_keys(node, path)
        _walk(node, (), lines)
    return LocatedYaml(path=path, data=data, lines=lines)


def load_yaml(path: str | Path) -> LocatedYaml:
    """Read and parse a YAML file; a missing or unreadable file is an InputError naming it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, expected a YAML file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror})") from None
    # a sweep loads the same base files once per config: parse each (path, text) once, hand out copies
    key = (str(p), text)
    parsed = _parsed.get(key)
    if parsed is None:
        parsed = parse_yaml_text(text, p)
        if len(_parsed) >= 64:
            _parsed.clear()
        _parsed[key] = parsed
    return LocatedYaml(path=parsed.path, data=copy.deepcopy(parsed.data), lines=dict(parsed.lines))


_parsed: dict[tuple[str, str], LocatedYaml] = {}
