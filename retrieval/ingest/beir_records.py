"""A BEIR record read back at extraction: discovery keeps only where each record's line starts in the corpus file
(``discover.discover_beir``), so extraction reads the line again and checks it against the content hash discovery
took. A record edited, moved or gone since is that document's error, never another text under its hash.

``RecordFiles`` opens each corpus file once for a batch of records (``open_regular``: a file swapped for a FIFO
since discovery is an error at once, never a read that waits for a writer). Opening it once per record cost
~11 µs a record, and under Prefect's local runner, whose partitions run on threads, each of those system calls
handed the GIL to the other thread and waited to get it back: at 100k records, 3 s of extraction became 22 s of
thread time (``benchmarks/scale_cluster.py --runners local``).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from ragrig.retrieval.documents import SourceDoc, sha256_bytes
from ragrig.retrieval.ingest.discover import beir_payload, beir_record, open_regular

__all__ = ["RecordFiles", "beir_source"]


class RecordError(Exception):
    """A record that cannot be read back as discovered (``extract`` turns it into its ``ExtractionError``)."""


class RecordFiles:
    """The corpus files a batch's records are read from, each opened on first use and kept open until ``close``
    (a file that could not be opened is that reason for every record of the batch in it)."""

    def __init__(self) -> None:
        self._open: dict[Path, BinaryIO | str] = {}

    def line(self, path: Path, offset: int) -> bytes:
        """The line that starts at ``offset`` of ``path``; RecordError when the file cannot be read."""
        fh = self._open.get(path)
        if fh is None:
            try:
                fh = open_regular(path)
            except OSError as exc:  # NotRegularFile among them
                fh = f"cannot read {path.name} ({exc.strerror or exc})"
            self._open[path] = fh
        if isinstance(fh, str):
            raise RecordError(fh)
        try:
            fh.seek(offset)  # within the buffer for records in file order: no system call
            return fh.readline()
        except OSError as exc:
            raise RecordError(f"cannot read {path.name} ({exc.strerror or exc})") from None

    def close(self) -> None:
        for fh in self._open.values():
            if not isinstance(fh, str):
                fh.close()
        self._open.clear()

    def __enter__(self) -> RecordFiles:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def beir_source(src: SourceDoc, files: RecordFiles | None = None) -> tuple[str, str]:
    """A BEIR record's (title, text): as given, or read back from its line in the corpus file (through ``files``;
    without them the file is opened for this record alone) and checked against the content hash discovery took.
    Raises RecordError with the one line for the document."""
    if src.offset is None or src.path is None:
        return src.title or "", src.text or ""
    if files is None:
        with RecordFiles() as own:
            return beir_source(src, own)
    raw = files.line(src.path, src.offset)
    try:
        doc_id, title, text = beir_record(raw)
    except (ValueError, KeyError, TypeError):
        doc_id, title, text = "", "", ""
    if doc_id != src.doc_id or sha256_bytes(beir_payload(title, text)) != src.sha256:
        raise RecordError(f"{src.path.name} changed during the ingest: the record at byte {src.offset} is no longer "
                          "this document's (run the ingest again)")
    return title, text
