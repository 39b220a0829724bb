"""An ingest's chunk vectors without holding them: the rows, in chunk order, read from the embedding cache a block
at a time when a build step writes them (``vectors.npy``, a Chroma collection). The embed stage makes sure every
row is in the cache (``embed.ensure_cached``); nothing after it needs the whole matrix in memory, which at 1M
chunks was 1.5 GB, and as many again for the unit-length copy ``vectors.npy`` is written from (docs/scale.md).

``VectorRows`` is what the build steps take: ``len``, ``dim`` and ``blocks(size)``, the rows in order. An array
is one (``ArrayRows``: the library's callers and tests that hold vectors); ``CachedRows`` reads the cache,
each row verified again as it is read (the checks of ``EmbeddingCache.get_checked``), so a cache damaged
between the embed stage and the build fails the build with one line instead of publishing a wrong row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from ragrig.configs.errors import RagrigError

BLOCK = 8192  # rows a block: 12 MiB of 384-wide float32


class VectorRows(Protocol):
    dim: int

    def __len__(self) -> int: ...

    def blocks(self, size: int | None = None) -> Iterator[np.ndarray]:
        """The rows in order, ``size`` (default ``BLOCK``) at a time (float32, ``dim`` wide)."""
        ...


@dataclass(frozen=True)
class ArrayRows:
    array: np.ndarray
    dim: int

    def __len__(self) -> int:
        return len(self.array)

    def blocks(self, size: int | None = None) -> Iterator[np.ndarray]:
        size = size or BLOCK
        for lo in range(0, len(self.array), size):
            yield np.asarray(self.array[lo : lo + size], dtype=np.float32)


@dataclass(frozen=True)
class CachedRows:
    """The vectors of ``shas`` (one a chunk, in order) by ``model`` in ``cache`` (anything with the embedding
    cache's ``get_checked``)."""

    cache: Any
    model: str
    shas: Sequence[str]
    dim: int
    normalized: bool

    def __len__(self) -> int:
        return len(self.shas)

    def blocks(self, size: int | None = None) -> Iterator[np.ndarray]:
        size = size or BLOCK
        for lo in range(0, len(self.shas), size):
            part = self.shas[lo : lo + size]
            good, bad, _ = self.cache.get_checked(self.model, part, dim=self.dim, normalized=self.normalized)
            lost = [s for s in dict.fromkeys(part) if s not in good]
            if lost:
                why = bad.get(lost[0], "not there")
                raise RagrigError(f"embedding cache {getattr(self.cache, 'path', '')}: {len(lost)} vector(s) of "
                                  f"{self.model} this ingest embedded or found are unusable now (the first: {why}); "
                                  "was the cache changed meanwhile? nothing was published; run the ingest again")
            yield np.vstack([good[s] for s in part]).astype(np.float32, copy=False)

    def array(self) -> np.ndarray:
        """Every row at once (a caller that needs the matrix: a partition's, a reader's view)."""
        return np.vstack(list(self.blocks())) if self.shas else np.zeros((0, self.dim), dtype=np.float32)


def as_rows(vectors: VectorRows | np.ndarray, dim: int) -> VectorRows:
    """``vectors`` as ``VectorRows`` (an array is wrapped; ``dim``: its width when it has no rows)."""
    if isinstance(vectors, np.ndarray):
        return ArrayRows(vectors, int(vectors.shape[1]) if vectors.ndim == 2 and len(vectors) else dim)
    return vectors


def take(rows: VectorRows, which: Sequence[int], size: int | None = None) -> Iterator[tuple[list[int], np.ndarray]]:
    """The rows ``which`` (ascending) a block at a time: (their places, their vectors)."""
    wanted = iter(which)
    nxt = next(wanted, None)
    lo = 0
    for block in rows.blocks(size):
        places: list[int] = []
        while nxt is not None and nxt < lo + len(block):
            places.append(nxt)
            nxt = next(wanted, None)
        if places:
            yield places, block[[p - lo for p in places]]
        lo += len(block)
        if nxt is None:
            return
