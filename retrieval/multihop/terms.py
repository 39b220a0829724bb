"""Terms from the keyword library that can be followed as references, mapped to the sections whose own header
yields them (what the reference judge follows)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.keywords import KeywordNormalizer, mine_terms


class TermIndex:
    """A term is followable when it names at most ``max_sections`` sections and is specific: a rule keyword
    with a value slot ("Lethal 5+"), or a name that at most ``rare_share`` of the chunks mention (so
    "Engagement Range", named everywhere in a rulebook, is not a reference worth a hop)."""

    def __init__(self, library: dict[str, Any], chunks: Sequence[Chunk], max_sections: int = 3,
                 rare_share: float = 0.05, stored: dict[str, list[str]] | None = None) -> None:
        self.normalizer = KeywordNormalizer(library)
        n_chunks = max(1, len(chunks))
        limit = max(2.0, rare_share * n_chunks)
        terms = library.get("terms", [])
        self.idf = {t["term"]: math.log(n_chunks / (1 + t.get("text_count", 0))) for t in terms}
        if stored is not None:  # the rows this index made when the version was built (``reader/terms.json``)
            self.rows = {t: set(ids) for t, ids in stored.items()}
            return
        followable = {t["term"] for t in terms if t["kind"] == "parameterized" or t.get("text_count", 0) <= limit}
        rows: dict[str, set[str]] = defaultdict(set)
        canonical = self.normalizer.canonical
        for c in chunks:
            # a document's own title (level 1) names the whole document, not a rule worth a hop
            if c.level <= 1 or c.part > 1 or not c.header_path:
                continue
            for key in mine_terms([c.header_path[-1]]):
                if key in canonical and canonical[key] in followable:
                    rows[canonical[key]].add(c.chunk_id)
        self.rows = {t: ids for t, ids in rows.items() if len(ids) <= max_sections}

    def terms_in(self, text: str) -> list[str]:
        found = [t for t in self.normalizer.mentioned(text) if t in self.rows]
        return sorted(found, key=lambda t: -self.idf.get(t, 0.0))

    def sections_of(self, term: str) -> set[str]:
        return self.rows.get(term, set())
