"""The one atomic file writer (``write_atomic``): every output, baseline, test set, manifest, CURRENT and memo
is written through it, so each keeps what a rename would otherwise lose.

Temp file in the target's folder, fsync, rename over the target: readers see the old or the new file, never
half. The rename replaces the directory entry it is given, so the writer first resolves symlinks (a symlinked
test set is updated at its target, and stays a symlink) and gives the new file the old one's mode (and owner,
where permitted): a 0600 test set stays 0600."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (a rename, a new file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes | Iterable[bytes], durable: bool = True, parents: bool = True) -> Path:
    """Write ``data`` (bytes, or its parts in order: a file too large to hold) to ``path`` whole or not at all and
    return the file written (``path``'s symlink target when it is one). ``durable=False`` skips the fsyncs (a memo
    that is only ever a cache). ``parents=False``: a missing folder is ``FileNotFoundError``, not created (a
    folder someone else removed stays removed). An error while the parts are made leaves the old file."""
    target = Path(os.path.realpath(path))  # a symlink (or a chain) is written at its final target
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666  # a new file: 0666 less the umask
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), mode)
        with os.fdopen(fd, "wb") as fh:
            if old is not None:
                os.fchmod(fh.fileno(), mode)  # exactly the old mode, whatever the umask
                try:
                    os.fchown(fh.fileno(), old.st_uid, old.st_gid)
                except OSError:
                    pass  # another user's file: keep ours (only root may give files away)
            for part in [data] if isinstance(data, bytes | bytearray | memoryview) else data:
                fh.write(part)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:  # a full disk, a quota: the old file stays, and no temp file is left
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(target.parent)
    return target


def unwritable(path: Path) -> str | None:
    """Why ``write_atomic(path, ...)`` would fail before it writes anything (None: it can write): ``path`` is a
    folder, or the nearest folder that exists on its way is a file or not writable (missing folders are created).
    Checked before any work, so a long run never ends in an error about where its result goes."""
    target = Path(os.path.realpath(path))
    if target.is_dir():
        return "is a directory; give a file path"
    return folder_problem(target.parent)


def nearest_existing(path: Path) -> Path:
    """``path``, or the nearest folder above it that exists (what a ``mkdir -p`` of ``path`` would start from)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def folder_problem(folder: Path) -> str | None:
    """Why nothing can be made inside ``folder`` (folders missing on its way would be created), or None: the
    nearest one that exists is a file, or this process cannot write in it. Tried, not inferred from permission
    bits (root passes ``os.access`` on /proc, where nothing can be created): a temp folder made there and removed."""
    folder = nearest_existing(folder)
    if not folder.is_dir():
        return f"{folder} is not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".ragrig-write-", dir=folder))
    except OSError as exc:
        return f"folder {folder} is not writable ({exc.strerror or exc})"
    return None


def place_folder(tmp: Path, target: Path) -> bool:
    """Rename the complete folder ``tmp`` to ``target`` (same filesystem) and make the rename durable: readers see
    no folder or the whole one. False when ``target`` already exists (another process placed it first); ``tmp``
    is then the caller's to remove."""
    try:
        os.rename(tmp, target)
    except OSError:
        if target.exists():
            return False
        raise
    fsync_dir(target.parent)
    return True
