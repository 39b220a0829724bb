"""ragrig: keep a RAG system's retrieval measurably good.

The public Python API (the rest of ``ragrig.*`` is importable too, but may change between releases)::

    import ragrig

    cfg = ragrig.load_config("configs/my.yaml", ["retrieval.top_k=5"])   # YAML < --config < overrides
    retriever = ragrig.Retriever(cfg)                                     # the published index version
    result = retriever.search("how do I …?")                              # hits with per-source ranks
    reports = ragrig.evaluate(cfg, ["datasets/testsets/mine.yaml"])       # metrics per query, tag, overall

Names are imported on first use, so ``import ragrig`` stays cheap (no torch, Chroma or Prefect).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_config": "ragrig.configs.load",
    "RagrigConfig": "ragrig.configs.models",
    "Retriever": "ragrig.retrieval.search.retriever",
    "RetrievalResult": "ragrig.retrieval.results",
    "Hit": "ragrig.retrieval.results",
    "Filters": "ragrig.retrieval.search.filters",
    "evaluate": "ragrig.eval.evaluate",
    "RagrigError": "ragrig.configs.errors",
    "InputError": "ragrig.configs.errors",
}

__all__ = ["Filters", "Hit", "InputError", "RagrigConfig", "RagrigError", "RetrievalResult", "Retriever", "evaluate",
           "load_config"]

if TYPE_CHECKING:  # pragma: no cover
    from ragrig.configs.errors import InputError, RagrigError
    from ragrig.configs.load import load_config
    from ragrig.configs.models import RagrigConfig
    from ragrig.eval.evaluate import evaluate
    from ragrig.retrieval.results import Hit, RetrievalResult
    from ragrig.retrieval.search.filters import Filters
    from ragrig.retrieval.search.retriever import Retriever


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragrig' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
