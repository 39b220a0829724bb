"""Header-level chunking with exact character offsets and a hard token ceiling.

A document is split at every ATX header of level 1..``max_header_level`` (headers in
code fences and frontmatter are not headers). Each region becomes a chunk that
knows its header path, level and ``[start, end)`` offsets into the document, so
``markdown[start:end] == text`` always holds and chunks never overlap. A region
whose search text does not fit the embedding model's window is split further at
paragraph boundaries, then sentences, then words, counted with the model's own
tokenizer, so the model never silently truncates a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragrig.retrieval.documents import HEADER_SEP, Chunk, Document, sha256_text
from ragrig.retrieval.markdown import parse_headers, split_frontmatter, strip_markup

TokenCounter = Callable[[Sequence[str]], list[int]]
"""Counts model tokens (no special tokens) for each text of a batch."""


def whitespace_counter(texts: Sequence[str]) -> list[int]:
    """A tokenizer stand-in: one token per whitespace-separated word (for tests and tokenizer-free use)."""
    return [len(t.split()) for t in texts]


@dataclass(frozen=True)
class ChunkingParams:
    max_header_level: int = 3
    max_tokens: int = 254  # the model's window minus its special tokens
    drop_empty_sections: bool = True
    title_path: bool = False  # a document without an H1: its title (frontmatter, else file name) heads every path
    frontmatter: bool = True  # False: no frontmatter field reaches a chunk's metadata (or its header path)


def document_title(doc: Document) -> str:
    """The document's title: its metadata title (frontmatter, BEIR), else its file name as words
    ("concepts/json_schema.md" -> "Json schema")."""
    title = str(doc.metadata.get("title") or "").strip()
    if title:
        return title
    stem = " ".join(re.split(r"[-_\s]+", Path(doc.doc_id).stem)).strip()
    return stem[:1].upper() + stem[1:]


_PARA_BREAK = re.compile(r"\n[ \t]*\r?\n")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_WORD = re.compile(r"\S+")


def make_search_text(header_path: Sequence[str], body: str) -> str:
    """What BM25 indexes and the model embeds: the header path on one line, then the body without markup noise
    (``markdown.strip_markup``); the chunk's own text stays as written."""
    path = HEADER_SEP.join(header_path)
    body = strip_markup(body).strip()
    return f"{path}\n{body}" if path and body else (path or body)


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _units(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Split text[start:end] at ``pattern`` matches into stripped, non-empty spans."""
    spans = []
    pos = start
    for m in pattern.finditer(text, start, end):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, end))
    out = []
    for s, e in spans:
        s, e = _strip_span(text, s, e)
        if e > s:
            out.append((s, e))
    return out


def _fence_aware_paragraphs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph spans, keeping a fenced code block (which may hold blank lines) in one unit."""
    paras = _units(text, start, end, _PARA_BREAK)
    merged: list[tuple[int, int]] = []
    open_fence = False
    for s, e in paras:
        if open_fence and merged:
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
        fences = len(re.findall(r"^ {0,3}(?:```|~~~)", text[s:e], flags=re.M))
        if fences % 2 == 1:
            open_fence = not open_fence
    return merged


class _Splitter:
    def __init__(self, text: str, prefix_tokens: int, limit: int, count: TokenCounter) -> None:
        self.text = text
        self.prefix_tokens = prefix_tokens  # the header path's tokens + 1 for the newline joiner (0: no path)
        self.limit = limit
        self.count = count

    def fits(self, start: int, end: int) -> bool:
        return self.prefix_tokens + self.count([self.text[start:end]])[0] <= self.limit

    def split(self, start: int, end: int, fits: bool | None = None) -> list[tuple[int, int]]:
        """Cover text[start:end] with as few stripped spans as fit, in order, never overlapping.
        ``fits``: whether the whole span fits, when the caller already counted it."""
        if fits if fits is not None else self.fits(start, end):
            return [(start, end)]
        for units in (
            _fence_aware_paragraphs(self.text, start, end),
            _units(self.text, start, end, re.compile(r"\r?\n")),
            _units(self.text, start, end, _SENTENCE_END),
        ):
            if len(units) > 1:
                return self._pack(units)
        return self._words(start, end)

    def _pack(self, units: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Greedy packing on the units' own counts (+1 per join), then one batched check of the spans that
        joined units: from the first one that does not fit (a tokenizer for which a joined text counts more
        than its parts plus joins), the rest is packed growing each span only while the joined text fits.
        (WordPiece never gets there, so it pays one count per unit and one per joined span.)"""
        sizes = self.count([self.text[s:e] for s, e in units])
        budget = self.limit - self.prefix_tokens
        out: list[tuple[int, int]] = []
        first: list[int] = []  # index of each span's first unit
        joined: list[int] = []  # spans of more than one unit, still to check
        cur = -1  # first unit of the open span
        cur_size = 0

        def close(upto: int) -> None:
            if cur >= 0:
                out.append((units[cur][0], units[upto - 1][1]))
                first.append(cur)
                if upto - cur > 1:
                    joined.append(len(out) - 1)

        for i, n in enumerate(sizes):
            if n > budget:  # a unit that alone does not fit: split it further
                close(i)
                cur = -1
                for piece in self.split(*units[i], fits=False):
                    out.append(piece)
                    first.append(i)
                continue
            if cur >= 0 and cur_size + n + 1 <= budget:
                cur_size += n + 1
            else:
                close(i)
                cur, cur_size = i, n
        close(len(units))
        counts = self.count([self.text[out[j][0] : out[j][1]] for j in joined]) if joined else []
        bad = [j for j, n in zip(joined, counts) if self.prefix_tokens + n > self.limit]
        if not bad:
            return out
        return out[: bad[0]] + self._pack_exact(units[first[bad[0]] :], sizes[first[bad[0]] :])

    def _pack_exact(self, units: list[tuple[int, int]], sizes: list[int]) -> list[tuple[int, int]]:
        budget = self.limit - self.prefix_tokens
        out: list[tuple[int, int]] = []
        cur: tuple[int, int] | None = None
        cur_size = 0
        for (s, e), n in zip(units, sizes):
            if n > budget:
                if cur:
                    out.append(cur)
                    cur, cur_size = None, 0
                out.extend(self.split(s, e, fits=False))
                continue
            if cur is not None and cur_size + n + 1 <= budget and self.fits(cur[0], e):
                cur, cur_size = (cur[0], e), cur_size + n + 1
            else:
                if cur:
                    out.append(cur)
                cur, cur_size = (s, e), n
        if cur:
            out.append(cur)
        return out

    def _words(self, start: int, end: int) -> list[tuple[int, int]]:
        words = [(m.start(), m.end()) for m in _WORD.finditer(self.text, start, end)]
        sizes = self.count([self.text[s:e] for s, e in words])
        budget = max(1, self.limit - self.prefix_tokens)
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(words):
            j, total = i, 0
            while j < len(words) and (total + sizes[j] <= budget or j == i):
                total += sizes[j]
                j += 1
            s, e = words[i][0], words[j - 1][1]
            while j - 1 > i and not self.fits(s, e):  # joined text can tokenise longer than the sum
                j -= 1
                e = words[j - 1][1]
            if j - 1 == i and not self.fits(s, e):  # one "word" longer than the window: cut by characters
                out.extend(self._chars(s, e))
            else:
                out.append((s, e))
            i = j
        return out

    def _chars(self, start: int, end: int) -> list[tuple[int, int]]:
        out = []
        pos = start
        while pos < end:
            lo, hi = pos + 1, end
            while lo < hi:  # largest end that fits
                mid = (lo + hi + 1) // 2
                if self.fits(pos, mid):
                    lo = mid
                else:
                    hi = mid - 1
            out.append((pos, lo))
            pos = lo
        return out


def chunk_document(doc: Document, params: ChunkingParams, count: TokenCounter = whitespace_counter) -> list[Chunk]:
    """Split one extracted document into chunks (see module docstring)."""
    text = doc.markdown
    meta, body_start, _err = split_frontmatter(text)
    headers = [h for h in parse_headers(text, body_start) if h.level <= params.max_header_level]

    regions: list[tuple[int, int, tuple[str, ...], int, int]] = []  # start, end, path, level, body_start
    first = headers[0].start if headers else len(text)
    if text[body_start:first].strip():
        regions.append((body_start, first, (), 0, body_start))
    stack: list[tuple[int, str]] = []
    for i, h in enumerate(headers):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.title))
        end = headers[i + 1].start if i + 1 < len(headers) else len(text)
        regions.append((h.start, end, tuple(t for _, t in stack), h.level, min(h.body_start, end)))

    if params.frontmatter:
        base_meta = {k: v for k, v in {**meta, **doc.metadata}.items()}
    else:  # what the extractor set itself: the format, and a BEIR record's title (not frontmatter)
        base_meta = {k: v for k, v in doc.metadata.items() if k == "format" or (k == "title" and doc.format == "beir")}
    title = str(base_meta.get("title") or "")
    if params.title_path and not any(h.level == 1 for h in parse_headers(text, body_start)):
        title = document_title(doc)
        regions = [(s, e, (title, *path) if level else path, level, b) for s, e, path, level, b in regions]
    chunks: list[Chunk] = []
    # each region's span to fit and header path; their token counts in two batched calls per document
    todo: list[tuple[int, int, int, int, int, list[str]]] = []  # start, end, body span, level, header path
    for start, end, path, level, bstart in regions:
        start, end = _strip_span(text, start, end)
        body_s, body_e = _strip_span(text, max(bstart, start), end) if level else (start, end)
        if level and body_e <= body_s and params.drop_empty_sections:
            continue
        todo.append((start, end, body_s, body_e, level, list(path) if path else ([title] if title else [])))
    prefixes = sorted({HEADER_SEP.join(hp) for *_, hp in todo} - {""})
    prefix_tokens = dict(zip(prefixes, (n + 1 for n in count(prefixes)))) if prefixes else {}
    spans = [(s, e) if level == 0 or be <= bs else (bs, be) for s, e, bs, be, level, _ in todo]
    span_tokens = count([text[s:e] for s, e in spans]) if spans else []
    for (start, _end, body_s, body_e, level, header_path), (s0, e0), n in zip(todo, spans, span_tokens):
        ptok = prefix_tokens.get(HEADER_SEP.join(header_path), 0)
        splitter = _Splitter(text, ptok, params.max_tokens, count)
        pieces = splitter.split(s0, e0, fits=ptok + n <= params.max_tokens)
        if not (level == 0 or body_e <= body_s):
            pieces[0] = (start, pieces[0][1])  # the header line belongs to the first piece
        for part, (ps, pe) in enumerate(pieces):
            body = text[ps:pe]
            if part == 0 and level:
                body = text[body_s:pe] if pe > body_s else ""
            search = make_search_text(header_path, body)
            chunks.append(
                Chunk(
                    chunk_id=f"{doc.doc_id}#{len(chunks)}",
                    doc_id=doc.doc_id,
                    header_path=header_path,
                    level=level,
                    start=ps,
                    end=pe,
                    text=text[ps:pe],
                    search_text=search,
                    sha256=sha256_text(search),
                    tokens=0,
                    part=part + 1 if len(pieces) > 1 else 0,
                    metadata=dict(base_meta),
                )
            )
    if chunks:
        counts = count([c.search_text for c in chunks])
        for c, n in zip(chunks, counts):
            c.tokens = n
    return chunks
