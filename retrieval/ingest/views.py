"""The views' units and their vectors (``search/views.py`` searches them): which texts each view embeds, under
which encoder, through the embedding cache. Ingest's ``views`` stage embeds every view its config weights
(``embed_views``), so a reader of the version only reads the vectors from the cache; ``views.json`` beside the
versions records what was embedded for the published version, so an unchanged re-ingest skips the stage.

- ``section``: one unit per header section, the pieces of a split section together (``section_groups``),
  embedded by the index's own model.
- ``vector2``: one unit per chunk (its search text), embedded by ``retrieval.views.second_model`` (its own query
  instruction, no document prefix).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.models import EmbeddingConfig, RetrievalConfig
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.cache import matrices
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.documents import Chunk, sha256_text
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.ingest.embed import cached_rows, embed_with_cache, ensure_cached
from ragrig.retrieval.ingest.tables import Column

VIEW_SOURCES = ("section", "vector2")
"""The retrieval sources (``search/sources.py``'s registry) that are views."""


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


def second_embedding(embedding: EmbeddingConfig, model: str, backend: str) -> EmbeddingConfig:
    """The settings of ``model`` run by ``backend`` (``retrieval.views.second_backend``) beside the index's encoder
    ``embedding`` (its own query instruction, no document prefix; the run settings the index's)."""
    return embedding.model_copy(update={"model": model, "query_prefix": None, "document_prefix": "",
                                        "backend": backend})


def second_embedder(embedding: EmbeddingConfig, model: str, memo_file: Path, backend: str) -> Embedder:
    """The encoder of the second view (``second_embedding``)."""
    return Embedder(second_embedding(embedding, model, backend), memo_file=memo_file)


def embed_units(embedder: Any, texts: Sequence[str], cache_path: Path | None, *, progress: bool = False,
                desc: str = "embed", warn: Callable[[str], None] | None = None) -> tuple[np.ndarray, int]:
    """The units' vectors (through the embedding cache at ``cache_path``, when given, and the whole matrix kept
    beside it: ``cache/matrices.py``) and how many were new; ``warn`` gets the line about cached vectors that
    failed verification (re-embedded). A reader's side: ingest's views stage uses ``ensure_units``."""
    if cache_path is None:
        return embedder.encode_sorted(list(texts), prefix=embedder.cfg.document_prefix), len(texts)
    shas = [sha256_text(t) for t in texts]
    folder, name = cache_path.parent / "matrices", matrices.key(embedder.id, embedder.cfg.document_prefix, shas)
    found = matrices.load(folder, name, len(texts))
    if found is not None:
        return found, 0
    cache = EmbeddingCache(cache_path)
    try:
        vecs, new = embed_with_cache(embedder, cache, texts, shas, progress=progress, desc=desc, warn=warn)
    finally:
        cache.close()
    matrices.save(folder, name, vecs)
    return vecs, new


def ensure_units(embedder: Any, texts: Sequence[str], cache_path: Path, *, progress: bool = False,
                 desc: str = "embed", warn: Callable[[str], None] | None = None) -> int:
    """Ingest's side of ``embed_units``: every unit's vector into the embedding cache (each cached one through
    its checks) and the matrix beside it written a block at a time from the cache (``vector_rows.CachedRows``,
    ``matrices.save_rows``), never held; how many were new."""
    shas = [sha256_text(t) for t in texts]
    cache = EmbeddingCache(cache_path)
    try:
        new = ensure_cached(embedder, cache, texts, shas, progress=progress, desc=desc, warn=warn)
        rows = cached_rows(embedder, cache, shas)
        matrices.save_rows(cache_path.parent / "matrices", matrices.key(embedder.id, embedder.cfg.document_prefix,
                                                                        shas), rows.blocks(), (len(shas), rows.dim))
    finally:
        cache.close()
    return new


def weighted_views(r: RetrievalConfig) -> list[str]:
    """The views ``r`` fuses (weight > 0), in registry order."""
    return [v for v in VIEW_SOURCES if r.fusion.weights.get(v, 0.0) > 0]


def view_encoders(r: RetrievalConfig, embedder: Embedder, embedding: EmbeddingConfig,
                  memo_file: Path) -> dict[str, Embedder]:
    """The encoder of every view ``r`` fuses: the index's own for ``section``, the second model for ``vector2``."""
    return {name: embedder if name == "section" else
            second_embedder(embedding, str(r.views.second_model), memo_file, r.views.second_backend)
            for name in weighted_views(r)}


def embed_views(chunks: Sequence[Chunk], encoders: dict[str, Embedder], cache_path: Path, *,
                progress: bool = False, warn: Callable[[str], None] | None = None) -> dict[str, int]:
    """Every view of ``encoders`` (``view_encoders``) embedded into the cache: how many vectors each newly
    embedded (0: all were cached)."""
    out: dict[str, int] = {}
    for name, enc in encoders.items():
        texts = section_groups(chunks)[0] if name == "section" else Column(chunks, "search_text")
        out[name] = ensure_units(enc, texts, cache_path, progress=progress, desc=f"embed {name}", warn=warn)
    return out


def views_recorded(path: Path, version: str, encoders: dict[str, Embedder]) -> bool:
    """Whether ``path`` (the index's ``views.json``) says every view of ``encoders`` was embedded, by that
    encoder, for ``version``: an unchanged re-ingest then neither loads the version's chunks nor reads their
    vectors back from the cache. Only a shortcut: a reader whose vectors are missing embeds them itself."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    done = data.get("views") if isinstance(data, dict) and data.get("version") == version else None
    return isinstance(done, dict) and all(done.get(name) == enc.id for name, enc in encoders.items())


def record_views(path: Path, version: str, encoders: dict[str, Embedder]) -> None:
    """Write ``views.json``: the views embedded for ``version``, each with its encoder's id (none: no file)."""
    if not encoders:
        return
    done = {name: enc.id for name, enc in encoders.items()}
    write_atomic(path, json.dumps({"version": version, "views": done}, sort_keys=True).encode(), durable=False)
