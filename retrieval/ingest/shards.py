"""The files Dask workers write for their partitions of the changed documents, inside the staging folder of
the version being built, and the driver's checked reading of them (``retrieval/ingest/partition.py`` writes,
``retrieval/ingest/partitions.py`` reads):

    versions/.tmp-vNNNNNN/shards/
        probe                     a random token the driver writes first: a worker that cannot read it does
                                  not see the home the driver sees (it is not on a filesystem they share)
        part-00003/
            documents.jsonl       the partition's extracted documents (``Document.to_dict``), in partition order
            chunks.jsonl          their chunks (``Chunk.to_dict``), in document order
            embedded-*.npz        vectors the partition embedded, one file per encoder batch (``ShardCache``)

Every file is written whole or not at all (temp file and rename), into folders that exist (a worker never
makes ``shards/`` or the staging folder: ``make_part_dir``); a partition's summary carries each file's
sha256, which the driver checks before it reads a byte (a file missing on the driver's side means the worker
wrote to a disk the driver does not see). The driver removes ``shards/`` before it writes the manifest, so a
published version never holds them; a crash leaves them in a staging folder the next ingest sweeps.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import RagrigError
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.cache.embeddings import EmbeddingCache, check_vector
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.index.format import CHUNKS, DOCUMENTS, file_sha256, iter_jsonl, jsonl_line

SHARDS = "shards"
PROBE = "probe"
EMBEDDED = "embedded-"


def part_dir(shards: Path, index: int) -> Path:
    return shards / f"part-{index:05d}"


def make_part_dir(shards: Path, index: int) -> Path:
    """A partition's folder, inside ``shards`` as the driver made it. A worker never creates ``shards`` (nor
    the staging folder above it): one the driver removed (it gave up on the version, say after losing the
    scheduler while this worker ran on) is ``FileNotFoundError`` here and for every shard file after, so a
    worker left running never writes a staging folder back."""
    out = part_dir(shards, index)
    out.mkdir(exist_ok=True)
    return out


def write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    data = b"".join(jsonl_line(r) for r in rows)
    # the staging folder is fsynced whole before it becomes a version; a removed one is not made again
    write_atomic(path, data, durable=False, parents=False)


def write_partition_tables(out: Path, docs: Sequence[Document], chunks: Sequence[Chunk]) -> None:
    write_rows(out / DOCUMENTS, (d.to_dict() for d in docs))
    write_rows(out / CHUNKS, (c.to_dict() for c in chunks))


def read_partition_tables(out: Path) -> tuple[list[Document], list[Chunk]]:
    return ([Document.from_dict(d) for d in iter_jsonl(out / DOCUMENTS)],
            [Chunk.from_dict(d) for d in iter_jsonl(out / CHUNKS)])


def file_sums(shards: Path, out: Path) -> dict[str, str]:
    """sha256 of every file of a partition's folder, by path relative to ``shards`` (a summary's ``files``)."""
    return {p.relative_to(shards).as_posix(): file_sha256(p)
            for p in sorted(out.iterdir()) if p.is_file() and not p.name.startswith(".")}


def check_files(shards: Path, files: dict[str, str], host: str) -> None:
    """Every file a worker says it wrote is here with the bytes it wrote, or one error saying which is not."""
    for rel, want in sorted(files.items()):
        path = shards / rel
        if not path.is_file():
            raise RagrigError(f"{path}: written by the Dask worker on {host} but not found here: the ragrig home "
                              "must be on a filesystem every worker and this process share (at the same path)")
        if file_sha256(path) != want:
            raise RagrigError(f"{path}: its sha256 is not the one the Dask worker on {host} wrote; "
                              "nothing was published (run the ingest again)")


class ShardCache:
    """One partition's embedding cache, for ``ingest.embed.ensure_cached`` and ``vector_rows.CachedRows``: reads
    the shared SQLite cache (``main``) and the vectors this partition embedded before (a retry after its worker was
    killed finds the killed attempt's batches here and embeds only the rest); writes each new batch as a file of its
    own in the partition's folder, never into SQLite.

    Why not many writers on the SQLite cache: its WAL journal needs memory shared by every process that opens
    it, which processes on different hosts do not have (sqlite.org/wal.html: "WAL does not work over a network
    filesystem"), and a home that Dask workers on several machines share is a network filesystem. So workers
    only read the cache; the driver alone writes what they embedded into it (``distributed.merge_embedded``),
    as it does for a local ingest: one writer, as WAL expects."""

    def __init__(self, out: Path, main: EmbeddingCache) -> None:
        self.out = out
        self.main = main
        self.path = out  # named in the warnings of ensure_cached

    def _own(self, model: str) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for path in sorted(self.out.glob(f"{EMBEDDED}*.npz")):
            file_model, shas, vecs = read_embedded(path)
            if file_model == model:
                found.update(zip(shas, vecs))
        return found

    def get_checked(self, model: str, shas: Sequence[str], dim: int | None = None, normalized: bool = False,
                    ) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
        own = {s: v for s, v in self._own(model).items() if check_vector(v, dim, normalized) is None}
        rest = [s for s in dict.fromkeys(shas) if s not in own]
        good, bad, _unsummed = self.main.get_checked(model, rest, dim, normalized)  # the driver re-sums those
        good.update(own)
        return good, bad, []

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if items:
            write_embedded(self.out / f"{EMBEDDED}{uuid.uuid4().hex[:12]}.npz", model, items)


def write_embedded(path: Path, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
    buf = io.BytesIO()
    np.savez(buf, model=np.array(model), shas=np.array([s for s, _ in items]),
             vecs=np.vstack([np.asarray(v, dtype=np.float32) for _, v in items]))
    write_atomic(path, buf.getvalue(), durable=False, parents=False)


def read_embedded(path: Path) -> tuple[str, list[str], np.ndarray]:
    """(model id, text shas, float32 rows) of one embedded-batch file."""
    with np.load(path, allow_pickle=False) as z:
        return str(z["model"]), [str(s) for s in z["shas"]], np.asarray(z["vecs"], dtype=np.float32)
