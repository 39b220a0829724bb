"""Context assembly: the hand-off to the LLM that answers. Numbered chunks, highest ranked first,
fitted to a token budget; each ``[n]`` maps back to a chunk id for citations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.retrieval.results import Hit


@dataclass
class Context:
    text: str
    citations: dict[int, str] = field(default_factory=dict)  # [n] -> chunk id
    tokens: int = 0
    dropped: list[str] = field(default_factory=list)  # chunk ids that did not fit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_block(n: int, hit: Hit) -> str:
    return f"[{n}] {hit.doc_id} — {hit.header or '(no header)'}\n{hit.text.strip()}\n"


def build_context(hits: Sequence[Hit], budget: int, count: Callable[[Sequence[str]], list[int]]) -> Context:
    """Add blocks in rank order while they fit the budget; a block that does not fit is skipped (a later,
    smaller one may still fit), so the context never exceeds ``budget`` tokens."""
    if not isinstance(budget, int) or budget < 1:
        raise InputError(f"the context budget must be a positive number of tokens (got {budget!r})")
    blocks: list[str] = []
    cites: dict[int, str] = {}
    used = 0
    dropped = []
    for h in hits:
        block = format_block(len(blocks) + 1, h)
        n = count([block])[0]
        if used + n > budget:
            dropped.append(h.chunk_id)
            continue
        blocks.append(block)
        cites[len(blocks)] = h.chunk_id
        used += n
    return Context(text="\n".join(blocks), citations=cites, tokens=used, dropped=dropped)
