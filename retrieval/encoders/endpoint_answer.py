"""What an OpenAI-compatible embeddings endpoint answered, read strictly: ``data`` a list of
``{"index": i, "embedding": [numbers]}`` objects, one per input, all of one width, each vector finite and not
zero (``vector_check.py``) and as wide as the probe's when that is known. Whatever else comes back is a
``ValueError`` saying what (the encoder puts the endpoint and the model in front of it): never a raw
AttributeError, IndexError or numpy error, and never a vector that reaches the cache, an index or a ranking."""

from __future__ import annotations

from typing import Any

import numpy as np
from ragrig.retrieval.vector_check import check_vector


def vectors_of(body: Any, n: int, dim: int | None) -> list[np.ndarray]:
    """The ``n`` vectors of an embeddings answer, in input order; ValueError saying what is wrong with it."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError("the response has no data list (want {\"data\": [{\"embedding\": [...]}, ...]})")
    if len(data) != n:
        raise ValueError(f"{len(data)} vectors for {n} texts")
    rows: list[tuple[int, np.ndarray]] = []
    for i, item in enumerate(data):
        emb = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(item, dict):
            raise ValueError(f"data[{i}] is a {type(item).__name__}, not an object with an embedding")
        try:
            vec = np.asarray(emb) if isinstance(emb, list) else None  # numpy infers the kind at C speed
        except (ValueError, TypeError):  # ragged nested lists
            vec = None
        if vec is None or vec.ndim != 1 or (vec.dtype.kind not in "fiu" and len(vec)):
            raise ValueError(f"data[{i}].embedding is {_kind(emb)}, not a list of numbers")
        index = item.get("index", i)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise ValueError(f"data[{i}].index is {index!r}, not one of 0..{n - 1}")
        rows.append((index, vec.astype(np.float32)))
    if len({i for i, _ in rows}) != n:
        raise ValueError("data[].index repeats an index")
    rows.sort(key=lambda r: r[0])
    widths = sorted({len(v) for _, v in rows})
    if len(widths) > 1:
        raise ValueError(f"vectors of different widths in one answer ({', '.join(map(str, widths))} values)")
    for index, vec in rows:
        why = check_vector(vec, dim, normalized=False)
        if why is not None:
            raise ValueError(f"the vector for input {index} is unusable: {why}")
    return [v for _, v in rows]


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    return f"a {type(value).__name__}" if not isinstance(value, list) else "a list holding other than numbers"
