"""The ``reader/`` folder of a version: what ``chunk_table.derive`` makes, written once by ingest so that a reader
opens the version without parsing every row (issue 38; docs/scale.md). Every file is in the manifest's ``files``
and checked with the rest; a reader also checks that the files fit the table (``load``), and a version without
the folder, or with another ``READER_FORMAT``, is read as before it existed (``chunk_table.ChunkTable.of``).

    reader/
        format.json    {"format": READER_FORMAT, "rows": n}
        rows.npy       int64[n + 1]: where each row's line starts in chunks.jsonl, then the file's size
        ids.bin        the chunk ids in row order (``text_column.py``); ids.npy: int64[n + 1] offsets
        order.npy      int64[n]: the rows in chunk-id order
        codes.npy      int64[n, 3]: Derived.codes
        docs.json      Derived.docs
        headers.txt    the header index's keys (``HeaderIndex.state``: normalised titles, one a line);
                       header_titles.bin / .npy their titles as written (``text_column.py``); header_rows.npy and
                       header_ptr.npy: int64, key i's rows are header_rows[header_ptr[i]:header_ptr[i + 1]]
        terms.json     Derived.terms
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.retrieval import text_column
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.headers import HeaderIndex
from ragrig.retrieval.index.chunk_table import ChunkTable, Derived, derive
from ragrig.retrieval.index.files import write_json
from ragrig.retrieval.text_column import TextColumn, offsets_fit

READER_DIR = "reader"
READER_FORMAT = 3  # 1 and 2 (never released): the header index in headers.json


def write_reader(version_dir: Path, chunks: Sequence[Chunk], library: dict[str, Any], offsets: np.ndarray,
                 digests: Sequence[str] | None = None) -> None:
    """``reader/`` for the rows just written to ``chunks.jsonl`` (``offsets``: ``format.write_tables``'s;
    ``digests``: see ``chunk_table.derive``)."""
    d = derive(chunks, library, digests)
    out = version_dir / READER_DIR
    out.mkdir(exist_ok=True)
    np.save(out / "rows.npy", np.asarray(offsets, dtype=np.int64))
    _write_text(out / "ids", [c.chunk_id for c in chunks])
    np.save(out / "order.npy", d.order)
    np.save(out / "codes.npy", d.codes)
    keys, shown, flat, ptr = d.headers.state()
    _write_compact(out / "docs.json", d.docs)
    write_atomic(out / "headers.txt", "\n".join(keys).encode("utf-8"))  # a key is words one space apart
    _write_text(out / "header_titles", shown)
    np.save(out / "header_rows.npy", flat)
    np.save(out / "header_ptr.npy", ptr)
    _write_compact(out / "terms.json", d.terms)
    write_json(out / "format.json", {"format": READER_FORMAT, "rows": len(chunks)})


def _write_compact(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _write_text(stem: Path, strings: Sequence[str]) -> None:
    blob, ends = text_column.encode(strings)
    write_atomic(stem.with_suffix(".bin"), blob)
    np.save(stem.with_suffix(".npy"), ends)


def _text(stem: Path, n: int) -> TextColumn:
    try:
        col = TextColumn(stem.with_suffix(".bin").read_bytes(), _array(stem.with_suffix(".npy")))
    except ValueError as exc:
        raise ValueError(f"{READER_DIR}/{stem.name}.npy does not fit {stem.name}.bin ({exc})") from None
    if len(col) != n:
        raise ValueError(f"{READER_DIR}/{stem.name}.npy holds {len(col)} strings, not {n}")
    return col


def has_reader(version_dir: Path) -> bool:
    """Whether the version has a ``reader/`` this code reads (else its rows are all parsed, as before)."""
    try:
        stamp = json.loads((version_dir / READER_DIR / "format.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("format") == READER_FORMAT


def _array(path: Path, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """An int64 array file (of ``shape``, or any one-dimensional one); ValueError naming the file otherwise."""
    try:
        a = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as exc:
        raise ValueError(f"{path.parent.name}/{path.name} is not a numpy array ({exc})") from None
    if a.dtype != np.int64 or (a.shape != shape if shape is not None else a.ndim != 1):
        want = list(shape) if shape is not None else "[n]"
        raise ValueError(f"{path.parent.name}/{path.name} is {a.dtype}{list(a.shape)}, not int64{want}")
    return a


def _json(path: Path, kind: type) -> Any:
    got = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(got, kind):
        raise ValueError(f"{path.parent.name}/{path.name} is not a JSON {kind.__name__}")
    return got


def load_table(version_dir: Path, n: int, chunks_file: Path, library: dict[str, Any],
               damaged: Callable[[str], Exception]) -> ChunkTable:
    """The version's table from ``reader/`` (``n``: the manifest's row count). Raises ValueError (or OSError)
    naming the file when one does not fit the table."""
    r = version_dir / READER_DIR
    rows = _array(r / "rows.npy", (n + 1,))
    if not offsets_fit(rows, chunks_file.stat().st_size, min_gap=1):
        raise ValueError(f"{READER_DIR}/rows.npy does not fit chunks.jsonl")
    ids = _text(r / "ids", n)
    order = _array(r / "order.npy", (n,))
    codes = _array(r / "codes.npy", (n, 3))
    if n and (order.min() < 0 or order.max() >= n or np.bincount(order, minlength=n).max() != 1):
        raise ValueError(f"{READER_DIR}/order.npy is not an order of the {n} rows")
    docs = _json(r / "docs.json", list)
    if n and (codes[:, 2].min() < 0 or codes[:, 2].max() >= len(docs) or codes[:, 0].min() < 0
              or codes[:, 1].min() < -1 or not set(map(type, docs)) <= {str}):
        raise ValueError(f"{READER_DIR}/codes.npy does not fit docs.json")
    text = (r / "headers.txt").read_bytes().decode("utf-8")
    keys = text.split("\n") if text else []
    headers = HeaderIndex.from_state(keys, _text(r / "header_titles", len(keys)), _array(r / "header_rows.npy"),
                                     _array(r / "header_ptr.npy"), n)
    terms = _json(r / "terms.json", dict)
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in terms.values()):
        raise ValueError(f"{READER_DIR}/terms.json is not term -> chunk ids")
    derived = Derived(order, codes, docs, headers, terms)
    return ChunkTable.lazy(chunks_file, rows, derived, ids.__getitem__, damaged)
