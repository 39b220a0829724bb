"""Packaged models that ship in one form and run in another: ``bge-small-en-v1.5`` with ``embedding.backend:
torch`` is the float copy of the packaged int8 ONNX weights (``onnx_torch.py``), converted once per machine into
``<ragrig cache>/models/`` (``$RAGRIG_CACHE_DIR``, else ``~/.cache/ragrig``; an unset cache: the system temp
folder) and used from there like any local sentence-transformers folder: its id is its content hash."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ragrig.configs.errors import InputError
from ragrig.retrieval.atomic import place_folder
from ragrig.retrieval.encoders.catalog import Packaged
from ragrig.retrieval.encoders.forward_check import cache_root

CONVERTER = 1  # the conversion's own version: bumped when its output would change
DONE = "modules.json"  # written last by sentence-transformers' save; the folder is renamed into place after it


def target(entry: Packaged) -> Path:
    root = cache_root() or Path(tempfile.gettempdir()) / "ragrig"
    form = entry.quantisation.replace(" ", "-")
    return root / "models" / f"{entry.aliases[0]}-{form}-{entry.package}-{entry.version()}-c{CONVERTER}"


def folder(entry: Packaged, source: Path) -> Path:
    """The converted folder of ``entry`` (whose shipped files are at ``source``), converting it when absent. Two
    processes converting at once each write a folder of their own; the first rename wins, the other's is
    dropped."""
    from ragrig.retrieval.encoders.onnx_torch import ConversionError, convert

    out = target(entry)
    if (out / DONE).is_file():
        return out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"embedding.model: {entry.aliases[0]!r} under the torch backend is converted once into "
                         f"{out.parent}, which cannot be written ({exc.strerror or exc}); set RAGRIG_CACHE_DIR "
                         "to a writable folder") from None
    try:
        convert(source, source / "model.onnx", scratch / "model", pooling=entry.pooling,
                query_prompt=entry.query_prefix)
        if not place_folder(scratch / "model", out) and not (out / DONE).is_file():
            raise InputError(f"embedding.model: {out} exists but holds no complete model folder; remove it (it "
                             "is converted again on next use)")
    except ConversionError as exc:
        raise InputError(f"embedding.model: {entry.aliases[0]!r} cannot run on torch: {exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
