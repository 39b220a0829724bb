"""More views of the same chunks, each another fused source (issue 28 item 3); off unless its fusion weight is
set. Both are exact matrix products over vectors embedded through the embedding cache (by model id and text
hash, so nothing is embedded twice across runs), made on the first query that needs them:

- ``section`` (``retrieval.fusion.weights.section``): whole-section vectors. A section is the pieces of one
  header section (same document, header path and level; one chunk when the section fit the window). Its text is
  the first piece's search text (header path line + body) followed by the other pieces' bodies, embedded by the
  index's own model (an unsplit section's text is its chunk's: a cache hit). A query's sections are ranked by
  cosine similarity and **each chunk takes its section's score**, rows in section order then row order, until
  ``depth`` rows. It helps where chunks are smaller than the model's window (``chunking.max_tokens``): the
  model then reads more of a section than any one chunk holds.
- ``vector2`` (``retrieval.fusion.weights.vector2`` and ``retrieval.views.second_model``): a second encoder's
  vectors of every chunk, queried with that encoder's own query vectors (its own query instruction).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.retrieval.documents import Chunk, sha256_text
from ragrig.retrieval.search.candidates import SourceRun

VIEWS = ("section", "vector2")


def section_groups(chunks: Sequence[Chunk]) -> tuple[list[str], list[list[int]]]:
    """Each section's text and its chunk rows, in row order. A whole section (part 0) is its own; a split
    section's pieces (parts 1, 2, ... in consecutive rows of one document, header path and level) form one."""
    groups: list[list[int]] = []
    for row, c in enumerate(chunks):
        prev = chunks[row - 1] if row else None
        if (c.part >= 2 and prev is not None and groups and prev.part == c.part - 1 and prev.doc_id == c.doc_id
                and prev.header_path == c.header_path and prev.level == c.level):
            groups[-1].append(row)
        else:
            groups.append([row])
    texts = [chunks[g[0]].search_text + "".join("\n\n" + chunks[r].text for r in g[1:]) for g in groups]
    return texts, groups


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12) if m.size else m


class ExactView:
    """Units (sections, or chunks under another model) with member rows, searched by exact cosine similarity."""

    def __init__(self, texts: Sequence[str], members: Sequence[Sequence[int]], embedder: Any,
                 cache_path: Path | None) -> None:
        self.texts, self.members, self.embedder, self.cache_path = list(texts), [list(m) for m in members], \
            embedder, cache_path
        self.queries: dict[str, np.ndarray] = {}  # query text -> this view's query vector (vector2's own model)

    @cached_property
    def matrix(self) -> np.ndarray:
        from ragrig.retrieval.cache.embeddings import EmbeddingCache
        from ragrig.retrieval.ingest.embed import embed_with_cache

        if self.cache_path is None:
            vecs = self.embedder.encode_sorted(self.texts, prefix=self.embedder.cfg.document_prefix)
        else:
            cache = EmbeddingCache(self.cache_path)
            vecs, _ = embed_with_cache(self.embedder, cache, self.texts, [sha256_text(t) for t in self.texts])
        return _unit(vecs)

    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        fresh = [t for t in dict.fromkeys(texts) if t not in self.queries]
        if len(self.queries) + len(fresh) > 100_000:  # a long-running server: drop them all past this many
            self.queries.clear()
            fresh = list(dict.fromkeys(texts))
        if fresh:
            self.queries.update(zip(fresh, self.embedder.encode_queries(fresh)))
        return np.vstack([self.queries[t] for t in texts])

    def search(self, qvecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[SourceRun]:
        """Per query: units by (-similarity, unit), each unit's rows (allowed by ``mask``) with the unit's
        similarity, until ``depth`` rows."""
        if not len(self.members):
            return [SourceRun.of([]) for _ in range(len(qvecs))]
        sims = _unit(qvecs) @ self.matrix.T
        out = []
        for s in sims:
            pairs: list[tuple[int, float]] = []
            for u in np.lexsort((np.arange(len(s)), -s)).tolist():
                pairs += [(r, float(s[u])) for r in self.members[u] if mask is None or mask[r]]
                if len(pairs) >= depth:
                    break
            out.append(SourceRun.of(pairs[:depth]))
        return out
