"""The new version's two tables, written once as the partitions come back, and read from there by every later stage
(issue 38: the driver's memory must not grow with the corpus).

Each partition's documents and chunks are appended to ``spill/`` in the staging folder the moment its turn in the
merge comes (``TableSpill``: per row only where its line ends and its document's number stay here), so the driver
never holds more than one partition's rows. ``write_tables`` then writes ``documents.jsonl`` and ``chunks.jsonl`` in
document-id order, the rows of the new documents copied byte for byte from the spill and those carried over from
the published version written as before (a document that failed again keeps its last good version): the bytes a
one-pass writer gives. The spill is removed. Later stages read the rows from the written file (``StagedChunks``: a
row parsed when asked for, or all in order a block at a time; ``Column``: one field of them) and the documents from
``documents.jsonl`` (``StagedDocs``).
"""

from __future__ import annotations

import os
import shutil
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.index import chunk_table
from ragrig.retrieval.index.chunk_table import LazyRows, RowSequence, text_digest
from ragrig.retrieval.index.format import CHUNKS, DOCUMENTS, JsonlWriter, iter_jsonl
from ragrig.retrieval.ingest.plan import Plan

SPILL = "spill"


class TableSpill:
    """The partitions' documents and chunks in the order they were merged, in two files of ``folder/spill``."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder / SPILL
        self.dir.mkdir()
        self.docs, self.chunks = JsonlWriter(self.dir / DOCUMENTS), JsonlWriter(self.dir / CHUNKS)
        self.doc_ids: list[str] = []  # per spilled document
        self.chunk_doc = array("q")  # per spilled chunk: its document's number in doc_ids

    def add(self, docs: Sequence[Document], chunks: Sequence[Chunk]) -> None:
        """One partition's rows (its chunks belong to its documents)."""
        number = {d.doc_id: len(self.doc_ids) + i for i, d in enumerate(docs)}
        for c in chunks:
            if c.doc_id not in number:
                raise RagrigError(f"a partition returned chunk {c.chunk_id} of document {c.doc_id}, which it did not "
                                  "extract; nothing was published")
            self.chunk_doc.append(number[c.doc_id])
            self.chunks.add(c.to_dict())
        for d in docs:
            self.doc_ids.append(d.doc_id)
            self.docs.add(d.to_dict())

    def __len__(self) -> int:
        return len(self.doc_ids)

    def close(self) -> None:
        """Its files closed (again: a no-op), as ``write_tables`` and an interrupted merge leave them."""
        self.docs.close()
        self.chunks.close()


@dataclass
class StagedTables:
    docs: StagedDocs
    chunks: StagedChunks


class StagedDocs:
    """``documents.jsonl``'s rows, parsed again on each pass."""

    def __init__(self, path: Path, n: int) -> None:
        self.path, self.n = path, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Document]:
        return (Document.from_dict(d) for d in iter_jsonl(self.path))


class StagedChunks(RowSequence):
    """``chunks.jsonl``'s rows by number (``offsets``: where each line starts, then the file's size), read through
    one open file: the staging folder may be renamed under it."""

    def __init__(self, path: Path, offsets: np.ndarray) -> None:
        self.offsets = offsets
        self._rows = LazyRows(path, offsets, lambda why: RagrigError(f"{path}: {why}; nothing was published"))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _row(self, i: int) -> Chunk:
        return self._rows[i]

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self._rows)


class Column(Sequence[str]):
    """One text field of every chunk, read through ``chunks`` when asked for (not held)."""

    def __init__(self, chunks: Sequence[Chunk], name: str) -> None:
        self.chunks, self.name = chunks, name

    def __len__(self) -> int:
        return len(self.chunks)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [getattr(c, self.name) for c in self.chunks[i]]
        return getattr(self.chunks[i], self.name)

    def __iter__(self) -> Iterator[str]:
        return (getattr(c, self.name) for c in self.chunks)


def columns(chunks: Sequence[Chunk], *names: str) -> tuple[list, ...]:
    """Fields of every chunk, one list each, in one pass over the rows."""
    out: tuple[list, ...] = tuple([] for _ in names)
    for c in chunks:
        for column, name in zip(out, names):
            column.append(getattr(c, name))
    return out


def slim(chunks: Sequence[Chunk]) -> tuple[list[Chunk], list[str]]:
    """Every row without its texts and metadata, and each text's ``chunk_table.text_digest``, in one pass: what the
    reader's structures and the manifest need of a version's rows (~0.6 kB a chunk instead of the rows' ~3)."""
    rows, digests = [], []
    for c in chunks:
        rows.append(Chunk(c.chunk_id, c.doc_id, c.header_path, c.level, c.start, c.end, "", "", c.sha256, c.tokens,
                          c.part))
        digests.append(text_digest(c.text))
    return rows, digests


def write_tables(folder: Path, plan: Plan, spill: TableSpill, failed: set[str]) -> StagedTables:
    """``documents.jsonl`` and ``chunks.jsonl`` of the version staged in ``folder``: every document in doc-id order
    (those carried over, the last good version of those that ``failed`` again, then the new ones not in ``failed``)
    with its chunks. Removes the spill."""
    spill.close()
    kept = [plan.previous_docs[i] for i in sorted(failed) if i in plan.previous_docs]
    old = {d.doc_id: d for d in [*plan.reused, *kept]}
    new = {doc_id: n for n, doc_id in enumerate(spill.doc_ids) if doc_id not in failed}
    old = {k: d for k, d in old.items() if k not in new}
    chunk_doc = np.frombuffer(spill.chunk_doc, dtype=np.int64)
    by_doc = np.argsort(chunk_doc, kind="stable")  # each new document's chunks, in the order they came
    starts = np.searchsorted(chunk_doc[by_doc], np.arange(len(spill.doc_ids) + 1))
    docs_out, chunks_out = JsonlWriter(folder / DOCUMENTS), JsonlWriter(folder / CHUNKS)
    spilled = {name: os.open(spill.dir / name, os.O_RDONLY) for name in (DOCUMENTS, CHUNKS)}
    try:
        doc_ends, chunk_ends = np.frombuffer(spill.docs.ends, np.int64), np.frombuffer(spill.chunks.ends, np.int64)
        order = sorted({*old, *new})
        doc_rows: list[int] = []  # new documents' spilled rows waiting to be copied (consecutive ones read together)
        chunk_rows: list[int] = []
        for doc_id in order:
            n = new.get(doc_id)
            if n is not None:
                doc_rows.append(n)
                chunk_rows.extend(by_doc[starts[n]:starts[n + 1]].tolist())
                continue
            _copy(spilled[DOCUMENTS], doc_ends, doc_rows, docs_out)
            _copy(spilled[CHUNKS], chunk_ends, chunk_rows, chunks_out)
            doc_rows, chunk_rows = [], []
            docs_out.add(old[doc_id].to_dict())
            for c in plan.reused_chunks.get(doc_id, []):
                chunks_out.add(c.to_dict())
        _copy(spilled[DOCUMENTS], doc_ends, doc_rows, docs_out)
        _copy(spilled[CHUNKS], chunk_ends, chunk_rows, chunks_out)
    finally:
        for fd in spilled.values():
            os.close(fd)
        docs_out.close()
        chunks_out.close()
    shutil.rmtree(spill.dir)
    offsets = np.frombuffer(chunks_out.ends, np.int64).copy()
    return StagedTables(StagedDocs(folder / DOCUMENTS, len(order)), StagedChunks(folder / CHUNKS, offsets))


def _copy(fd: int, ends: np.ndarray, rows: list[int], out: JsonlWriter) -> None:
    """Rows of a spilled file appended to ``out`` as they are, consecutive rows read together."""
    i = 0
    while i < len(rows):
        j = i + 1
        while (j < len(rows) and rows[j] == rows[j - 1] + 1
               and ends[rows[j] + 1] - ends[rows[i]] < chunk_table.READ_BLOCK):
            j += 1
        start = int(ends[rows[i]])
        out.add_lines(os.pread(fd, int(ends[rows[j - 1] + 1]) - start, start),
                      (int(ends[r + 1] - ends[r]) for r in rows[i:j]))
        i = j
