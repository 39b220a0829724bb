"""Training pairs from a published version's structure: no labels, no LLM, no test case. Pure and deterministic
(the same chunks, keyword library, kinds and seed give the same pairs in the same order).

Kinds (``embedding.adapt.pairs``):
- ``header_body``: a section's header title with its parent's ("Parent > Title") -> the section's body (one pair
  per piece of a section split to fit the window);
- ``cloze``: the inverse cloze task: one sentence of a body (chosen by seed) -> the rest of that body;
- ``keyword_section``: a keyword-library term -> the section that defines it (its header names the term;
  a term that names more than ``MAX_TERM_SECTIONS`` sections says nothing and is left out);
- ``parent_child``: a parent's header path -> a child section (its own title and body).

A pair whose anchor equals its positive, or that repeats an earlier pair, is dropped; an anchor repeated across
pairs stays (sentence-transformers' NO_DUPLICATES batch sampler keeps it out of the other's batch, so it is never
its own false negative). ``sample`` caps the list at ``max_pairs`` by seed, keeping the order.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragrig.configs.models import PAIR_KINDS
from ragrig.retrieval.documents import HEADER_SEP, Chunk
from ragrig.retrieval.keywords import SLOT

MIN_WORDS = 3  # a body, sentence or rest shorter than this teaches nothing
MIN_SENTENCES = 3  # cloze: a body needs this many sentences (one to ask, two or more to find it in)
MAX_TERM_SECTIONS = 3
_SENTENCE = re.compile(r"[^\n.!?]+(?:[.!?]+|$)", re.M)


@dataclass(frozen=True)
class Pair:
    kind: str
    anchor: str
    positive: str
    section: tuple[str, tuple[str, ...]]  # (doc id, header path) of the positive: its own section is no negative
    negatives: tuple[str, ...] = field(default=())


def body(chunk: Chunk) -> str:
    """The chunk's embedded text without its header path line (what ``make_search_text`` put first)."""
    text = chunk.search_text
    if chunk.header_path and text.startswith(HEADER_SEP.join(chunk.header_path)):
        text = text.partition("\n")[2]
    return text.strip()


def _words(text: str) -> int:
    return len(text.split())


def _key(chunk: Chunk) -> tuple[str, tuple[str, ...]]:
    return chunk.doc_id, tuple(chunk.header_path)


def header_body(chunks: Sequence[Chunk]) -> list[Pair]:
    out = []
    for c in chunks:
        b = body(c)
        if c.header_path and _words(b) >= MIN_WORDS:
            out.append(Pair("header_body", HEADER_SEP.join(c.header_path[-2:]), b, _key(c)))
    return out


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: runs ending at . ! ? or a line end, with at least one word."""
    return [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group().strip(" \t.!?")]


def cloze(chunks: Sequence[Chunk], seed: int) -> list[Pair]:
    out = []
    for c in chunks:
        b = body(c)
        spans = [(s, e) for s, e in sentences(b)]
        if len(spans) < MIN_SENTENCES:
            continue
        s, e = spans[random.Random(f"{seed}:{c.chunk_id}").randrange(len(spans))]
        question = b[s:e].strip()
        rest = (b[:s].rstrip() + " " + b[e:].lstrip()).strip()
        if _words(question) >= MIN_WORDS and _words(rest) >= MIN_WORDS:
            out.append(Pair("cloze", question, rest, _key(c)))
    return out


def _first_pieces(chunks: Sequence[Chunk]) -> list[Chunk]:
    """One chunk per section: its first piece."""
    return [c for c in chunks if c.part <= 1 and c.header_path]


_PARAM = re.compile(r"(.+?)\s+" + SLOT + r"(?:\"|”|″| inch(?:es)?)?")
_SIDES = re.compile(r"\s[-–—]\s")


def _definitions(heads: Sequence[Chunk]) -> dict[tuple[str, str], list[Chunk]]:
    """(term kind, casefolded term) -> the sections whose header defines such a term: its whole title (phrase),
    its title before a value slot ("Lethal x+": parameterized), or one side of "A - B" (part). One pass over the
    headers, so the lookup per library term is a dict access."""
    out: dict[tuple[str, str], list[Chunk]] = {}
    for c in heads:
        title = c.header_path[-1].casefold()
        keys = [("phrase", title)]
        m = _PARAM.fullmatch(title)
        if m:
            keys.append(("parameterized", m.group(1)))
        sides = _SIDES.split(title)
        if len(sides) > 1:
            keys += [("part", side.strip()) for side in sides]
        for key in dict.fromkeys(keys):
            out.setdefault(key, []).append(c)
    return out


def keyword_section(chunks: Sequence[Chunk], library: dict[str, Any]) -> list[Pair]:
    defs = _definitions(_first_pieces(chunks))
    out = []
    for term in library.get("terms", []):
        kind = term.get("kind") if term.get("kind") in ("parameterized", "part") else "phrase"
        found = defs.get((kind, str(term["term"]).casefold()), [])
        if not found or len(found) > MAX_TERM_SECTIONS:
            continue
        for c in found:
            b = body(c)
            if _words(b) >= MIN_WORDS:
                out.append(Pair("keyword_section", str(term["term"]), b, _key(c)))
    return out


def parent_child(chunks: Sequence[Chunk]) -> list[Pair]:
    out = []
    for c in _first_pieces(chunks):
        b = body(c)
        if len(c.header_path) >= 2 and _words(b) >= MIN_WORDS:
            out.append(Pair("parent_child", HEADER_SEP.join(c.header_path[:-1][-2:]), f"{c.header_path[-1]}\n{b}",
                            _key(c)))
    return out


def make_pairs(chunks: Sequence[Chunk], library: dict[str, Any], kinds: Sequence[str], seed: int) -> list[Pair]:
    """Every pair of ``kinds`` (in that order, each in chunk order), without self-pairs and repeats."""
    makers = {"header_body": lambda: header_body(chunks), "cloze": lambda: cloze(chunks, seed),
              "keyword_section": lambda: keyword_section(chunks, library), "parent_child": lambda: parent_child(chunks)}
    assert set(makers) == set(PAIR_KINDS)
    out, seen = [], set()
    for kind in kinds:
        for p in makers[kind]():
            key = (p.anchor.casefold(), p.positive)
            if p.anchor.strip().casefold() != p.positive.strip().casefold() and key not in seen:
                seen.add(key)
                out.append(p)
    return out


def sample(pairs: list[Pair], max_pairs: int | None, seed: int) -> list[Pair]:
    """At most ``max_pairs`` of ``pairs``, chosen by ``seed``, in their order."""
    if max_pairs is None or len(pairs) <= max_pairs:
        return list(pairs)
    keep = sorted(random.Random(seed).sample(range(len(pairs)), max_pairs))
    return [pairs[i] for i in keep]


def counts(pairs: Sequence[Pair]) -> dict[str, int]:
    """Pairs per kind (every kind listed, zero included)."""
    out = dict.fromkeys(PAIR_KINDS, 0)
    for p in pairs:
        out[p.kind] += 1
    return out
