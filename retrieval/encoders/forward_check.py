"""Whether ``bert_forward.BertForward`` gives a model's own sentence-transformers output bit for bit, checked, never
assumed: both encode the probe texts below (empty, whitespace, accents, CJK, emoji, code, a text past the window;
in batches of one, three and the configured size, so padding is exercised) and count their tokens, and the
verdict is kept per (model identity, device, normalisation, torch / transformers / sentence-transformers /
tokenizers versions) in this process, in a JSON file beside the model-digest memo (``<home>/cache/
torch-forward.json``) and in the same file in this user's cache on this machine (``machine_file``): the key
holds nothing a home adds, so a new home (a CI job's, a project's) finds the verdict another home recorded
instead of paying sentence-transformers' import and the check again (~10 s of 2 cores). A command that loads
sentence-transformers anyway (an ingest that embeds, or a query with no verdict yet) checks and records; one
that finds ``true`` runs the model without importing it. A library upgrade is a new key: checked again. A
damaged or unwritable file costs only a check.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.retrieval.atomic import write_atomic
from ragrig.retrieval.encoders.model_files import json_object

PROBES = (
    "", " ", "a", "Hello, World!", "How does grappling work?", "naïve café ÜBER straße Ærøskøbing", "日本語のテキスト",
    "emoji 🙂 and a zero\u200bwidth space", "tabs\tand\nnew lines  and  double spaces",
    "def f(x: int) -> int:\n    return x ** 2  # code, CamelCase and snake_case_names",
    "Model.model_validate_json() vs model_dump(mode='json') in Pydantic v2.7",
    " ".join(f"word{i} of a long passage that runs past the model's window" for i in range(120)),
)
log = logging.getLogger(__name__)
_LIBRARIES = ("torch", "transformers", "sentence-transformers", "tokenizers")
CACHE_ENV = "RAGRIG_CACHE_DIR"
FILE = "torch-forward.json"
_verdicts: dict[str, bool] = {}
_lock = threading.Lock()


def check_key(identity: str, device: str, normalize: bool) -> str:
    """The verdict's key: the model, where and how it runs, and the versions of every library either path uses."""
    return f"{identity} | {device} | normalize={normalize} | {_versions()}"


@functools.cache
def _versions() -> str:
    """The installed versions of ``_LIBRARIES`` (read once a process: every encoder asks)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for lib in _LIBRARIES:
        try:
            out.append(f"{lib}=={version(lib)}")
        except PackageNotFoundError:
            out.append(f"{lib} missing")
    return " ".join(out)


def machine_file() -> Path | None:
    """This user's verdicts on this machine: ``$RAGRIG_CACHE_DIR/torch-forward.json`` (an empty value: none),
    else under ``$XDG_CACHE_HOME/ragrig`` or ``~/.cache/ragrig``."""
    root = cache_root()
    return root / FILE if root is not None else None


def cache_root() -> Path | None:
    """This user's ragrig cache on this machine: ``$RAGRIG_CACHE_DIR`` (an empty value: none), else
    ``$XDG_CACHE_HOME/ragrig`` or ``~/.cache/ragrig``."""
    where = os.environ.get(CACHE_ENV)
    if where is not None:
        return Path(where) if where.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragrig"


def recorded(path: Path | None, key: str) -> bool | None:
    """The verdict for ``key``: this process's, else the home's file (``path``), else this machine's
    (``machine_file``); None when none has one. A verdict found is written to the files that lack it: a later
    process need not check again."""
    with _lock:
        got = _verdicts.get(key)
    if got is None:
        for place in (path, machine_file()):
            value = _read(place).get(key)
            if isinstance(value, bool):
                got = value
                break
    if got is not None:
        record(path, key, got)
    return got


def record(path: Path | None, key: str, same: bool) -> None:
    """``same`` for ``key`` in this process, the home's file and this machine's (each written only when it
    holds another value)."""
    with _lock:
        _verdicts[key] = same
    for place in (path, machine_file()):
        if place is None:
            continue
        data = _read(place)
        if data.get(key) is same:
            continue
        data[key] = same
        try:
            place.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(place, json.dumps(data, sort_keys=True, indent=1).encode(), durable=False)
        except OSError:
            pass  # a read-only home or cache: the next process checks again


def _read(path: Path | None) -> dict[str, Any]:
    return json_object(path) if path is not None else {}


def same_output(lean: Any, st: Any, *, batch_size: int, normalize: bool, target: str = "") -> bool:
    """Whether ``lean`` (a ``BertForward``) and ``st`` (the ``SentenceTransformer``) agree on the probes bit for
    bit: window, width, token counts and vectors in batches of 1, 3 and ``batch_size``. A lean forward that
    fails on them (weights of another shape or name than its config says) does not agree: logged, not raised."""
    try:
        return _same(lean, st, batch_size, normalize)
    except Exception as exc:
        log.warning("the lean forward cannot run %s (%s: %s); sentence-transformers encodes its queries", target,
                    type(exc).__name__, str(exc)[:160])
        return False


def _same(lean: Any, st: Any, batch_size: int, normalize: bool) -> bool:
    dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    if lean.window != int(st.max_seq_length) - 2 or lean.dim != int(dim()):
        return False
    texts = list(PROBES)
    if lean.count_tokens(texts) != [len(x) for x in st.tokenizer(texts, add_special_tokens=False,
                                                                  truncation=False)["input_ids"]]:
        return False
    for size in sorted({1, 3, batch_size}):
        theirs = st.encode(texts, batch_size=size, normalize_embeddings=normalize, convert_to_numpy=True,
                           show_progress_bar=False)
        ours = lean.encode(texts, batch_size=size, normalize=normalize)
        if ours.shape != theirs.shape or ours.dtype != np.float32 or \
                not np.array_equal(ours.view(np.uint32), np.asarray(theirs, dtype=np.float32).view(np.uint32)):
            return False
    return True
