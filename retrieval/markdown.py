"""Markdown structure: YAML frontmatter and ATX headers (outside code fences), with character offsets.

Shared by the chunker (where sections start) and the test-set resolver (where an
expected section spans), so both agree on what a section is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from ragrig.configs.yamlio import YamlBombError, safe_load_bounded

FRONTMATTER_SLACK = 10_000
"""How much larger than its text a frontmatter block may expand through YAML aliases (``yamlio`` units):
the metadata is copied into every chunk of the document, so the cap is far below a config file's."""


class FrontmatterRefused(ValueError):
    """Frontmatter that must not be ingested at all (a YAML bomb): the document fails with this reason."""

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`)(.+?)\1")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Header:
    level: int
    title: str  # plain text: emphasis markers, escapes and trailing #s removed
    start: int  # offset of the header line's first character
    body_start: int  # offset just past the header line (its newline included)


def clean_title(raw: str) -> str:
    text = _ESCAPE.sub(r"\1", raw.strip())
    prev = None
    while prev != text:
        prev, text = text, _EMPHASIS.sub(r"\2", text)
    return _SPACE.sub(" ", text).strip()


def normalize_header(text: str) -> str:
    """The comparison form of a header or a header path: clean, casefolded, single spaces."""
    return clean_title(text.lstrip("#")).casefold()


def split_frontmatter(text: str) -> tuple[dict[str, Any], int, str | None]:
    """Return (metadata, offset where the body starts, error). No frontmatter -> ({}, 0, None).

    Frontmatter is a ``---`` line at the very start, YAML, and a closing ``---`` or ``...`` line.
    Malformed YAML is reported (never raised): the block is still skipped, so it never becomes a chunk.
    A YAML bomb (aliases expanding far beyond the block, recursive aliases, nesting over 100 levels) raises
    ``FrontmatterRefused``: that document fails, with the reason.
    """
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return {}, 0, None
    first_nl = text.index("\n") + 1
    for m in re.finditer(r"^(---|\.\.\.)[ \t]*\r?$", text[first_nl:], flags=re.M):
        block = text[first_nl : first_nl + m.start()]
        end = first_nl + m.end()
        if end < len(text) and text[end] == "\n":
            end += 1
        try:
            data = safe_load_bounded(block, FRONTMATTER_SLACK) if block.strip() else {}
        except YamlBombError as exc:
            raise FrontmatterRefused(f"frontmatter refused: {exc}") from None
        except yaml.YAMLError as exc:
            return {}, end, f"frontmatter is not valid YAML: {str(exc).splitlines()[0]}"
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return {}, end, f"frontmatter is not a mapping (got {type(data).__name__})"
        return {str(k): v for k, v in data.items()}, end, None
    return {}, 0, None  # no closing line: not frontmatter


def iter_lines(text: str, start: int = 0):
    """Yield (offset, line_without_newline, offset_after_newline)."""
    pos = start
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl + 1
        yield pos, text[pos : (end - 1 if nl != -1 else end)].rstrip("\r"), end
        pos = end


def parse_headers(text: str, start: int = 0) -> list[Header]:
    """ATX headers from ``start`` on, skipping fenced code blocks."""
    headers: list[Header] = []
    fence: str | None = None
    for off, line, after in iter_lines(text, start):
        fm = _FENCE.match(line)
        if fence is not None:
            if fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= len(fence) and not line.strip()[len(fm.group(1)) :].strip():
                fence = None
            continue
        if fm:
            fence = fm.group(1)
            continue
        m = _ATX.match(line)
        if m:
            title = clean_title(m.group(2) or "")
            headers.append(Header(level=len(m.group(1)), title=title, start=off, body_start=after))
    return headers


@dataclass(frozen=True)
class Section:
    header: Header
    path: tuple[str, ...]  # titles from the outermost header down to this one
    start: int
    end: int  # next header of the same or a higher level, or the end of the text


def sections(text: str, max_level: int = 6, start: int = 0) -> list[Section]:
    """Every header of level <= max_level with its full section span and header path."""
    headers = [h for h in parse_headers(text, start) if h.level <= max_level]
    out: list[Section] = []
    stack: list[Header] = []
    for i, h in enumerate(headers):
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
        end = len(text)
        for later in headers[i + 1 :]:
            if later.level <= h.level:
                end = later.start
                break
        out.append(Section(header=h, path=tuple(x.title for x in stack), start=h.start, end=end))
    return out
