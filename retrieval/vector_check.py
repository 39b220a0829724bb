"""Whether one embedding is usable: the check every vector passes where it is made (an encoder's answer,
ingest's new vectors, a query's vector) and where it is read back (the embedding cache)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError

NORM_TOLERANCE = 1e-3  # a normalised float32 vector's norm is 1 to ~1e-6


def check_vector(vec: np.ndarray, dim: int | None, normalized: bool) -> str | None:
    """Why ``vec`` is not a usable embedding (``dim``: the width it must have; ``normalized``: it must be unit
    length), or None."""
    if vec.ndim != 1 or (dim is not None and vec.shape[0] != dim):
        return f"{vec.shape[0] if vec.ndim == 1 else vec.shape} values, the model has {dim}"
    if not vec.shape[0]:
        return "an empty vector"
    if not np.isfinite(vec).all():
        return "NaN or infinite values"
    norm = float(np.linalg.norm(vec.astype(np.float64)))
    if norm == 0.0:
        return "a zero vector"
    if normalized and abs(norm - 1.0) > NORM_TOLERANCE:
        return f"norm {norm:.4g}, the model normalises to 1"
    return None


def first_bad_row(vecs: np.ndarray, dim: int | None, normalized: bool) -> tuple[int, str] | None:
    """(row, why) of the first row of ``vecs`` that ``check_vector`` refuses, or None: whole-array checks in
    float32 first, then the exact check on the rows they suspect only."""
    if vecs.ndim != 2:
        return 0, f"an array of shape {vecs.shape}, not one row per text"
    if not len(vecs):
        return None
    if (dim is not None and vecs.shape[1] != dim) or not vecs.shape[1]:
        return 0, check_vector(vecs[0], dim, normalized) or "the wrong width"
    for row in _suspects(vecs, normalized):
        why = check_vector(vecs[row], dim, normalized)
        if why is not None:
            return row, why
    return None


def _suspects(block: np.ndarray, normalized: bool) -> list[int]:
    """The rows of ``block`` (one width) that whole-array float32 checks cannot pass: not finite, zero, or off unit
    length for a normalising model. Only these need ``check_vector``'s exact check, which decides (float32 sums
    are 1e-6 off at most, and can underflow)."""
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        ok = np.isfinite(block).all(axis=1) & (norms > 0)
        if normalized:
            ok &= np.abs(norms - 1.0) <= NORM_TOLERANCE
    return np.flatnonzero(~ok).tolist()


def verdicts(vecs: Sequence[np.ndarray], dim: int | None, normalized: bool) -> list[str | None]:
    """``check_vector``'s answer for each of ``vecs``, the rows of the model's width checked together (``_suspects``,
    as ``first_bad_row``): a cache read of 100k rows took ~1.6 s row by row."""
    out: list[str | None] = [None] * len(vecs)
    same = [i for i, v in enumerate(vecs) if dim is not None and v.ndim == 1 and v.shape[0] == dim and dim > 0]
    for i in set(range(len(vecs))) - set(same):
        out[i] = check_vector(vecs[i], dim, normalized)
    if same:
        for j in _suspects(np.vstack([vecs[i] for i in same]).astype(np.float32, copy=False), normalized):
            out[same[j]] = check_vector(vecs[same[j]], dim, normalized)
    return out


def query_vectors(embedder: Any, texts: Sequence[str], dim: int, index: str) -> np.ndarray:
    """``embedder``'s query vectors for ``texts``, each checked where it is made: as wide as the vectors of
    ``index`` (``dim``), finite, not zero. A model that answers otherwise (an endpoint answering NaN, or serving
    another model under the same name) is one error naming it and what was wrong, never a ranking."""
    vecs = np.asarray(embedder.encode_queries(texts))
    bad = first_bad_row(vecs, dim, normalized=False)
    if bad is None:
        return vecs
    if vecs.ndim == 2 and vecs.shape[1] != dim:
        raise RagrigError(f"embedding model {embedder.id} answers {vecs.shape[1]}-wide query vectors, but "
                          f"index {index} holds {dim}-wide ones: re-ingest (`ragrig ingest`)")
    raise RagrigError(f"embedding model {embedder.id} gave an unusable vector for the query "
                      f"{texts[bad[0]][:80]!r} ({bad[1]}): no ranking without it")
