"""Where an adapted model goes, and placing it there whole or not at all.

The default folder is ``<home>/models/<index key>-<version>-<recipe hash>/``; the recipe hash covers the
recipe (``embedding.adapt``), the base model's id and the version's content (its chunks' hashes), so a folder that
exists is the same training's result and is reused (``ragrig tune``'s adapted candidates train once per index).
The model is written to a hidden temp folder beside the target and renamed into place at the end: an interrupted
run leaves no partial folder (a leftover temp folder is removed by the next run for that target).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.retrieval.atomic import folder_problem
from ragrig.retrieval.documents import Chunk

ADAPT_VERSION = 1  # bump when pairs or training change meaning: cached folders are not reused across it
RECORD = "ragrig_adapt.json"  # inside the model folder: what made it (no timings: the folder stays reproducible)


def corpus_digest(chunks: Sequence[Chunk]) -> str:
    """The version's content: its chunks' text hashes in order (12 hex digits)."""
    return hashlib.sha256("\n".join(c.sha256 for c in chunks).encode()).hexdigest()[:12]


def recipe_hash(cfg: RagrigConfig, base_model_id: str, corpus: str, query_prefix: str = "") -> str:
    """The training's identity (the anchors carry the query prefix: one only when there is one, so the folders
    made before prefixes reached the anchors keep their names)."""
    fields = {"adapt": cfg.embedding.adapt.model_dump(), "base": base_model_id, "corpus": corpus,
              "version": ADAPT_VERSION}
    if query_prefix:
        fields["query_prefix"] = query_prefix
    blob = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def default_dir(cfg: RagrigConfig, index_key: str, version: str, digest: str) -> Path:
    return cfg.home_dir / "models" / f"{index_key}-{version}-{digest}"


def read_record(folder: Path) -> dict[str, Any] | None:
    """The record of a complete adapted folder, or None (not one of ours, or unreadable)."""
    try:
        data = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _temp(target: Path) -> Path:
    return target.parent / f".tmp-{target.name}-{os.getpid()}"


def scratch_prefix(tmp: Path) -> str:
    """The name prefix of the trainer's scratch folder beside ``tmp`` (the temp model folder): a leftover of
    either, from a run killed by a signal Python cannot catch, is cleared by the next run for the same target."""
    return f"{tmp.name}-run-"


def clear_leftovers(target: Path) -> None:
    """Remove the temp model folders and trainer scratch folders runs for ``target`` left (SIGKILL, SIGTERM)."""
    for p in target.parent.glob(f".tmp-{target.name}-*"):
        shutil.rmtree(p, ignore_errors=True)


def check_output(target: Path, replace: bool) -> None:
    """A folder the user named (``--output``) can take the model, or one line before any work: never a file, an
    existing folder only with ``replace`` and only one adapt wrote (or an empty one: ``--force`` must not wipe a
    project folder given by mistake), and somewhere this process can write."""
    if target.exists() or target.is_symlink():
        if not target.is_dir():
            raise InputError(f"--output {target} is not a folder; name a folder for the model (a file is never "
                             "replaced)")
        if not replace:
            raise InputError(f"--output {target} exists; remove it, choose another folder, or pass --force")
        if read_record(target) is None and any(target.iterdir()):
            raise InputError(f"--output {target} holds files ragrig adapt did not write; --force replaces only a "
                             "model folder adapt wrote (or an empty folder): choose another folder")
    problem = folder_problem(target.parent)
    if problem:
        raise InputError(f"--output {target}: {problem}")


@contextmanager
def placed(target: Path, replace: bool) -> Iterator[Path]:
    """Yield a temp folder path (not created) to write the model into; on success it is renamed to ``target``
    (an existing ``target`` only with ``replace``: moved aside, then removed); on any failure or interrupt it
    is removed and ``target`` is untouched."""
    if target.exists() and not replace:
        raise InputError(f"--output {target} exists; remove it, choose another folder, or pass --force")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--output {target}: cannot create {target.parent} ({exc.strerror or exc})") from None
    clear_leftovers(target)
    tmp = _temp(target)
    try:
        yield tmp
        if not tmp.is_dir():
            raise RuntimeError(f"training wrote no model folder at {tmp}")
        old = None
        if target.exists():
            old = target.parent / f".old-{target.name}-{os.getpid()}"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_record(folder: Path, record: dict[str, Any]) -> None:
    (folder / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


