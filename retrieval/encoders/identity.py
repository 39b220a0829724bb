"""A model's identity by its content, so new weights copied over the same folder are a new model (new cache
keys, a rebuilt index) and never a silent mix of two embedding spaces.

- a packaged model: its package name and version (``catalog.py``);
- a local folder: the sha256 of its files (every file but dotfiles and README/LICENSE text), each file's digest
  memoised by (path, size, mtime, ctime, inode): ctime moves on any write or ``cp -p``/``touch`` and cannot be
  set back by a user, so a replaced file is always re-hashed, while an unchanged folder costs a few ``stat``
  calls. A digest is memoised only when the file's stamp was the same before and after it was read and its last
  change was over ``file_stamps.RACY_NS`` earlier (a write within one tick of a coarse clock keeps the times).
  Whole files, not a sample: a fine-tune with frozen embeddings keeps the size and the first megabytes;
- a hub name: the name plus the cached snapshot's commit when the local Hugging Face cache has it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

from ragrig.retrieval import file_stamps
from ragrig.retrieval.atomic import write_atomic

_SKIP_PREFIXES = ("readme", "license", "licence")
_memo: dict[str, list] = {}  # absolute path -> [*file_stamps.stamp, sha256]
_memo_lock = threading.Lock()


def _files(folder: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and not name.lower().startswith(_SKIP_PREFIXES):
                out.append(Path(dirpath) / name)
    return out


def file_sha256(path: Path) -> tuple[str, bool]:
    """The file's sha256, memoised by its stat stamp, and whether it was computed now (not memoised)."""
    key, stamp = str(path.resolve()), file_stamps.stamp(path)
    with _memo_lock:
        hit = _memo.get(key)
    if hit is not None and hit[:-1] == stamp:
        return str(hit[-1]), False
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    # remembered only if the file did not change while it was read and its last change is not within a tick of
    # a coarse clock (a write then could keep the stamp): else the next call hashes it again
    if file_stamps.stamp(path) == stamp and file_stamps.settled(stamp):
        with _memo_lock:
            _memo[key] = [*stamp, digest.hexdigest()]
    return digest.hexdigest(), True


def _load_memo(memo_file: Path | None) -> None:
    if memo_file is None or not memo_file.is_file():
        return
    try:
        saved = json.loads(memo_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a damaged memo only costs a re-hash
    with _memo_lock:
        for k, v in saved.items() if isinstance(saved, dict) else ():
            if isinstance(v, list) and len(v) == 6 and k not in _memo:  # (5: before the device; hashed again)
                _memo[k] = v


def _save_memo(memo_file: Path | None) -> None:
    if memo_file is None:
        return
    try:
        with _memo_lock:
            data = json.dumps(_memo).encode("utf-8")
        write_atomic(memo_file, data, durable=False)
    except OSError:
        pass  # a read-only home: hashes are recomputed next time, never wrong


def folder_digest(folder: Path, memo_file: Path | None = None) -> str:
    """sha256 over the folder's files (relative path and content digest, in path order); 12 hex digits."""
    _load_memo(memo_file)
    outer, fresh = hashlib.sha256(), False
    for path in _files(folder):
        digest, computed = file_sha256(path)
        fresh |= computed
        outer.update(f"{path.relative_to(folder).as_posix()}\0{digest}\n".encode())
    if fresh:
        _save_memo(memo_file)
    return outer.hexdigest()[:12]


def hub_revision(name: str) -> str | None:
    """The commit of the locally cached snapshot of a hub model, or None (not cached, or not a hub name)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for probe in ("modules.json", "config.json"):
        try:
            found = try_to_load_from_cache(name, probe)
        except Exception:  # an invalid repo id: not a hub name
            return None
        if isinstance(found, str):
            return Path(found).parent.name[:12]
    return None
