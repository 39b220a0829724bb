"""A file's identity as the filesystem keeps it: size, modification and change times (ns), inode and device. Two
equal stamps mean the file was not written in between (any write moves the change time, which no user can set
back), which is what lets a sha256 computed once be trusted later: model folders' digests
(``encoders/identity.py``) and a version's checked files (``index/verified.py``)."""

from __future__ import annotations

import os
from pathlib import Path


def stamp(path: Path | str) -> list[int]:
    """The identity of ``path`` (symlinks followed: a Hugging Face snapshot links into its blobs)."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
