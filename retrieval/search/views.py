"""More views of the same chunks, each another fused source (issue 28 item 3; entries of ``sources.py``'s
registry); off unless its fusion weight is set. Both are exact searches (``vector_search.py``'s ``dots`` and
``top_rows``: the same scores whatever the batch) over vectors embedded through the embedding cache (by model id
and text hash, so nothing is embedded twice across runs). ``ragrig ingest`` embeds the views its config weights
(``ingest/views.py``, which also says which texts each view embeds), so a reader only reads them from the cache;
a view weighted later (a ``--set`` at query time, a sweep's candidate) is embedded by the first query needing it:

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
from ragrig.configs.models import EmbeddingConfig, RetrievalConfig
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.index.vectors import unit_rows
from ragrig.retrieval.ingest.views import embed_units, second_embedder, section_groups
from ragrig.retrieval.search.candidates import SourceRun
from ragrig.retrieval.search.vector_search import dots, top_rows


class ExactView:
    """Units (sections, or chunks under another model) with member rows, searched by exact cosine similarity."""

    def __init__(self, texts: Sequence[str], members: Sequence[Sequence[int]], embedder: Any,
                 cache_path: Path | None) -> None:
        self.texts, self.members, self.embedder, self.cache_path = list(texts), [list(m) for m in members], \
            embedder, cache_path
        self.unit_of = np.repeat(np.arange(len(self.members)), [len(m) for m in self.members])  # per member row

    @cached_property
    def matrix(self) -> np.ndarray:
        return unit_rows(embed_units(self.embedder, self.texts, self.cache_path)[0], np.float64)

    def search(self, qvecs: np.ndarray, depth: int, mask: np.ndarray | None) -> list[SourceRun]:
        """Per query: units by (-similarity, unit), each unit's rows (allowed by ``mask``) with the unit's
        similarity, until ``depth`` rows (each allowed unit gives one row at least: ``depth`` units suffice)."""
        if not len(self.members):
            return [SourceRun.of([]) for _ in range(len(qvecs))]
        units = None if mask is None else np.unique(self.unit_of[np.flatnonzero(mask[np.concatenate(self.members)])])
        out = []
        for qv in unit_rows(qvecs, np.float64):
            sims = dots(self.matrix, qv)
            found, scores = top_rows(sims if units is None else sims[units], depth, units)
            pairs: list[tuple[int, float]] = []
            for u, s in zip(found.tolist(), scores.tolist()):
                pairs += [(r, s) for r in self.members[u] if mask is None or mask[r]]
                if len(pairs) >= depth:
                    break
            out.append(SourceRun.of(pairs[:depth]))
        return out


class Views:
    """An index's views, each made on first use: the section view, and one chunk view per second model."""

    def __init__(self, chunks: Sequence[Chunk], embedder: Any, embedding: EmbeddingConfig, cache_path: Path,
                 memo_file: Path) -> None:
        self.chunks, self.embedder, self.embedding, self.cache_path, self.memo_file = \
            chunks, embedder, embedding, cache_path, memo_file
        self.seconds: dict[tuple[str, str], ExactView] = {}

    @cached_property
    def section(self) -> ExactView:
        texts, groups = section_groups(self.chunks)
        return ExactView(texts, groups, self.embedder, self.cache_path)

    def second(self, model: str, backend: str) -> ExactView:
        """The chunks under another embedding model (its own query instruction, no document prefix)."""
        if (model, backend) not in self.seconds:
            second = second_embedder(self.embedding, model, self.memo_file, backend)
            self.seconds[model, backend] = ExactView([c.search_text for c in self.chunks],
                                                     [[i] for i in range(len(self.chunks))], second, self.cache_path)
        return self.seconds[model, backend]

    def of(self, source: str, r: RetrievalConfig) -> ExactView:
        """The view behind ``source`` (one of ``ingest/views.VIEW_SOURCES``) under ``r``."""
        if source == "section":
            return self.section
        if source == "vector2" and r.views.second_model:
            return self.second(r.views.second_model, r.views.second_backend)
        raise ValueError(f"{source!r} is not a view under this config")
