"""A file's identity as the filesystem keeps it: size, modification and change times (ns), inode and device. Two
equal stamps mean the file was not written in between (any write moves the change time, which no user can set
back), which is what lets a sha256 computed once be trusted later: model folders' digests
(``encoders/identity.py``) and a version's checked files (``index/verified.py``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

# A change within one tick of a coarse filesystem clock after a stamp was taken keeps its times (git's "racy"
# entries): a file whose change time is this recent when it was hashed is hashed again next time.
RACY_NS = 2_000_000_000


def stamp(path: Path | str) -> list[int]:
    """The identity of ``path`` (symlinks followed: a Hugging Face snapshot links into its blobs)."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def settled(st: list[int], now_ns: int | None = None) -> bool:
    """Whether a file with stamp ``st`` was last changed more than ``RACY_NS`` before ``now_ns`` (default: now), so
    a digest computed now may be trusted while the stamp stays the same."""
    return st[2] < (time.time_ns() if now_ns is None else now_ns) - RACY_NS
