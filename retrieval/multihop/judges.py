"""Hop judges: given the query and the chunks gathered so far, say whether they can answer it and what is
missing. The reference judge here is offline and deterministic; the LLM judge (``llm_judge.py``) asks any
OpenAI-compatible chat endpoint.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ragrig.retrieval.results import Hit


@dataclass
class Missing:
    item: str  # a rule title or a short sub-query
    origin: str | None = None  # chunk id whose text named it (None: the query itself)


@dataclass
class Judgement:
    can_answer: bool
    reasoning: str
    missing: list[Missing] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class HopJudge(Protocol):
    def judge(self, query: str, hits: Sequence[Hit]) -> Judgement: ...


class TermLookup(Protocol):
    """What the reference judge needs from an index: which terms a text names, and their sections."""

    def terms_in(self, text: str) -> list[str]: ...

    def sections_of(self, term: str) -> set[str]: ...


def parse_missing(items: Sequence[str] | str) -> list[str]:
    """Missing items from a judge: split on commas/semicolons/newlines, strip quotes and bullets, de-duplicate."""
    raw = [items] if isinstance(items, str) else list(items)
    out: list[str] = []
    for it in raw:
        for part in re.split(r"[,;\n]", str(it)):
            p = part.strip().strip("-*•").strip().strip("\"'“”‘’`").strip()
            if p and p.casefold() not in {o.casefold() for o in out}:
                out.append(p)
    return out


def names_section(query: str, header_path: Sequence[str]) -> bool:
    """Whether the query names one of these headers as a whole phrase (any case, plural or possessive)."""
    for title in header_path:
        t = title.strip()
        if len(t) >= 3 and re.search(r"(?<!\w)" + re.escape(t) + r"(?:'s|s|es)?(?!\w)", query, re.IGNORECASE):
            return True
    return False


class ReferenceJudge:
    """Finds terms that the query or the newest hop's top chunk(s) name (keyword-library terms and header
    titles) whose own sections are not in the context yet; asks for the best few, query mentions first,
    then terms named by higher-ranked chunks. Nothing new -> can answer.

    ``scan_hits`` = 1 follows the references of the best chunk of each hop: the chain query -> weapon
    profile -> "Lethal x+" rule. Scanning the top 3 added more noise than links on our rules sets.

    ``anchored`` (default): a chunk's references are followed only when the query names something itself:
    a specific rule (a followable term), or a header on that chunk's own path ("stuck in a Web spell" ->
    the Web section -> Restrained). A chain starts at something the user named; a general question ("what
    size table do I need?") is answered by its own best sections, and the rules its top chunk happens to
    mention would only push them out of the window."""

    def __init__(self, lookup: TermLookup, max_items: int = 3, scan_hits: int = 1, anchored: bool = True) -> None:
        self.lookup = lookup
        self.max_items = max_items
        self.scan_hits = scan_hits
        self.anchored = anchored

    def judge(self, query: str, hits: Sequence[Hit]) -> Judgement:
        have = {h.chunk_id for h in hits}
        candidates: dict[str, tuple[float, str | None]] = {}

        def consider(term: str, score: float, origin: str | None) -> None:
            own = self.lookup.sections_of(term)
            if not own or own & have:
                return  # unknown term, or its section is already in the context
            best = candidates.get(term)
            if best is None or score > best[0]:
                candidates[term] = (score, origin)

        named = self.lookup.terms_in(query)
        for term in named:
            consider(term, 10.0, None)
        fresh = [h for h in hits if h.hop == max((x.hop for x in hits), default=0)] or list(hits)
        for rank, h in enumerate(fresh[: self.scan_hits], 1):
            if self.anchored and not named and not names_section(query, h.header_path):
                continue
            for term in self.lookup.terms_in(h.text):
                consider(term, 1.0 / rank, h.chunk_id)
        ranked = sorted(candidates.items(), key=lambda kv: (-kv[1][0], kv[0]))[: self.max_items]
        if not ranked:
            if not named and self.anchored:
                return Judgement(True, "the query names no specific rule to follow references from")
            return Judgement(True, "every rule the query and the top chunks name is in the context")
        names = ", ".join(t for t, _ in ranked)
        return Judgement(False, f"named but not in the context: {names}", [Missing(t, o) for t, (_, o) in ranked])
