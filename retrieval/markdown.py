"""Markdown structure: YAML frontmatter and ATX headers (outside code fences), with character offsets.

Shared by the chunker (where sections start) and the test-set resolver (where an
expected section spans), so both agree on what a section is.

Header titles are kept as plain text (``clean_title``: inline markup, attribute lists, inline HTML and escapes
removed) and compared in one normal form (``normalize_header``: word tokens, casefolded), so a header written
``## Rebuilding a `TypeAdapter`'s schema {#rebuild}`` in the user's file and the same header after a converter
rewrote it (``## Rebuilding a `TypeAdapter` 's schema``) are one section. ``strip_markup`` drops the same noise
from body text for what BM25 indexes and the model embeds; chunk text itself stays the file's text.
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
# emphasis: * and ** anywhere, _ and __ only at word boundaries (snake_case identifiers keep their underscores)
_EMPHASIS = re.compile(r"(\*\*|\*|`+)(.+?)\1|(?<![\w\\])(__|_)(?=\S)(.+?)(?<=\S)\3(?!\w)")
_ATTRIBUTES = re.compile(r"[ \t]*\{[ \t]*[:#.][^{}\n]*\}")  # { #anchor }, {: .class }, {.class}
_EMPTY_LINK = re.compile(r"\[\]\([^)\n]*\)")  # mkdocs anchors: [](){#id}
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")  # [text](url), ![alt](src) -> text / alt
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WORD = re.compile(r"\w+")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Header:
    level: int
    title: str  # plain text: emphasis markers, escapes and trailing #s removed
    start: int  # offset of the header line's first character
    body_start: int  # offset just past the header line (its newline included)
    raw: str = ""  # the text after the #s as written (attribute list and markup kept; trailing #s removed)


def strip_markup(text: str) -> str:
    """Text without Markdown/HTML noise that carries no words: HTML comments and tags, attribute lists, empty
    anchor links, link and image targets (their text stays). Code and words are kept as written."""
    text = _HTML_COMMENT.sub("", text)
    text = _EMPTY_LINK.sub("", text)
    text = _ATTRIBUTES.sub("", text)
    text = _LINK.sub(r"\1", text)
    return _HTML_TAG.sub("", text)


def clean_title(raw: str) -> str:
    """A header's plain text: markup noise, emphasis and code markers, escapes and extra spaces removed."""
    text = strip_markup(raw.strip())
    prev = None
    while prev != text:
        prev, text = text, _EMPHASIS.sub(lambda m: m.group(2) if m.group(1) else m.group(4), text)
    text = _ESCAPE.sub(r"\1", text)
    return _SPACE.sub(" ", text).strip()


_MARKUP = frozenset("<{[*`_\\")  # a character every pattern ``clean_title`` removes needs one of


def normalize_header(text: str) -> str:
    """The comparison form of a header or a header path segment: its word tokens, casefolded, one space apart
    (punctuation and the spacing around it do not count: "TypeAdapter's" == "TypeAdapter 's"). A title without
    markup skips ``clean_title``'s patterns: only its spaces would change, and they do not count here."""
    text = text.lstrip("#")
    plain = text if _MARKUP.isdisjoint(text) else clean_title(text)
    return " ".join(_WORD.findall(plain.casefold()))


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


def parse_headers(text: str, start: int | None = None) -> list[Header]:
    """ATX headers from ``start`` on (default: after the frontmatter), skipping fenced code blocks."""
    if start is None:
        start = split_frontmatter(text)[1]
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
            raw = (m.group(2) or "").strip()
            headers.append(Header(level=len(m.group(1)), title=clean_title(raw), start=off, body_start=after, raw=raw))
    return headers


@dataclass(frozen=True)
class Section:
    header: Header
    path: tuple[str, ...]  # titles from the outermost header down to this one
    start: int
    end: int  # next header of the same or a higher level, or the end of the text
    written: tuple[str, ...] = ()  # the same path as written (``Header.raw``: attribute lists and markup kept)


def sections(text: str, max_level: int = 6, start: int | None = None) -> list[Section]:
    """Every header of level <= max_level (from ``start``, default: after the frontmatter) with its full
    section span and header path."""
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
        out.append(Section(header=h, path=tuple(x.title for x in stack), start=h.start, end=end,
                           written=tuple(x.raw for x in stack)))
    return out
