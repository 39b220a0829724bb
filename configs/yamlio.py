"""Safe YAML loading that remembers where every key came from, and refuses YAML bombs.

Errors in user files must name the file, the line and the field. PyYAML's
``safe_load`` throws the node positions away, so we compose the node tree
ourselves (still only safe constructors) and keep a map from key paths to lines.

Aliases make a YAML text a graph: 500 bytes of nested ``*a`` references expand to millions of nodes
(the "billion laughs"), and every consumer that walks the data (validation, ``str()``, copying into
chunk metadata) pays for the expansion. ``compose_bounded`` measures the expanded size on the node graph
(each node once, so the measure is linear in the text) and refuses a text that expands beyond a cap, a
recursive alias, or nesting too deep, before anything is constructed: milliseconds, whatever the bomb.
"""

from __future__ import annotations

import copy
import re
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


# ---- YAML bombs ---------------------------------------------------------------------------------------
EXPANSION_SLACK = 1_000_000
"""How much larger than its text a user YAML file may expand through aliases (in ``expanded_size`` units:
one per node plus one per character of a scalar). A file without aliases expands to about its own size."""
MAX_DEPTH = 100
"""Nesting deeper than this is refused: PyYAML composes recursively, and its scanner is quadratic in the depth
of flow collections (``[[[[…`` 1,000 deep: 6 s before the first event)."""
_BRACKETS = re.compile(r"[^\[\]{}]+")


def _flow_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in the text, counted on the brackets alone (quoted ones included, so
    an over-estimate): cheap enough to run before the scanner sees the text."""
    depth = deepest = 0
    for ch in _BRACKETS.sub("", text):
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


class YamlBombError(ValueError):
    """A YAML text whose aliases expand beyond the cap, alias themselves, or nest too deep."""


def check_expansion(text: str, limit: int) -> int:
    """The size of ``text``'s YAML with every alias expanded: one unit per node and one per scalar character,
    measured in one pass over the parser's events (aliases add their anchor's size, so the cost is linear in
    the text, and nothing recursive runs). Raises ``YamlBombError`` when the size passes ``limit``, for an
    alias inside the node it names, or for nesting deeper than ``MAX_DEPTH``; ``yaml.YAMLError`` for bad syntax.
    """
    if _flow_depth(text) > MAX_DEPTH:
        raise YamlBombError(f"brackets nested deeper than {MAX_DEPTH} levels: refused")
    anchored: dict[str, int] = {}
    stack: list[list[Any]] = [[None, 0]]  # [anchor, size so far] per open collection; the bottom one: documents
    total = 0
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) > MAX_DEPTH:
                raise YamlBombError(f"nested deeper than {MAX_DEPTH} levels (line {ev.start_mark.line + 1})")
            stack.append([ev.anchor, 1])
            continue
        if isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, size = stack.pop()
        elif isinstance(ev, yaml.ScalarEvent):
            anchor, size = ev.anchor, 1 + len(ev.value)
        elif isinstance(ev, yaml.AliasEvent):
            if ev.anchor not in anchored:
                if any(frame[0] == ev.anchor for frame in stack):
                    raise YamlBombError(f"line {ev.start_mark.line + 1}: alias *{ev.anchor} refers to a node that "
                                        "contains it (recursive data is refused)")
                continue  # an undefined alias: compose reports it with its line
            anchor, size = None, anchored[ev.anchor]
        else:
            continue
        if anchor is not None:
            anchored[anchor] = size
        stack[-1][1] += size
        total = stack[0][1]
        if stack[-1][1] > limit or total > limit:
            raise YamlBombError(f"line {ev.start_mark.line + 1}: aliases expand it beyond {limit:,} units "
                                f"({len(text):,} characters of text): refused as a YAML bomb")
    return total


def compose_bounded(text: str, slack: int = EXPANSION_SLACK) -> yaml.Node | None:
    """Check that ``text``'s aliases expand to at most ``len(text) + slack`` units (``check_expansion``), then
    compose it (safe loader). Raises ``yaml.YAMLError`` for a syntax error and ``YamlBombError`` for a bomb."""
    check_expansion(text, len(text) + slack)
    return yaml.compose(text, Loader=yaml.SafeLoader)


def construct(node: yaml.Node | None) -> Any:
    """The Python data of a composed (and size-checked) node, with the safe constructors."""
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def safe_load_bounded(text: str, slack: int = EXPANSION_SLACK) -> Any:
    """``yaml.safe_load`` that refuses YAML bombs (``compose_bounded``) before constructing anything."""
    return construct(compose_bounded(text, slack))


def parse_yaml_text(text: str, path: Path) -> LocatedYaml:
    """Parse YAML text with safe constructors only; syntax errors name file and line, bombs are refused."""
    try:
        node = compose_bounded(text)
    except (YamlBombError, yaml.YAMLError) as exc:
        raise _input_error(exc, path) from None
    lines: dict[KeyPath, int] = {}
    if node is not None:  # before constructing: the constructor flattens merge keys (<<) into the nodes
        _check_duplicate_keys(node, path)
        _walk(node, (), lines)
    try:
        data = construct(node)
    except yaml.YAMLError as exc:
        raise _input_error(exc, path) from None
    return LocatedYaml(path=path, data=data, lines=lines)


def _input_error(exc: Exception, path: Path) -> InputError:
    if isinstance(exc, YamlBombError):
        return InputError(f"{path}: {exc}")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        return InputError(f"{path}{line}: malformed YAML: {problem}")
    return InputError(f"{path}: malformed YAML: {exc}")  # pragma: no cover - non-marked errors are rare


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
