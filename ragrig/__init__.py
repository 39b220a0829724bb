"""ragrig: keep a RAG system's retrieval measurably good.

The public Python API (the rest of ``ragrig.*`` is importable too, but may change between releases)::

    import ragrig

    cfg = ragrig.load_config("configs/my.yaml", ["retrieval.top_k=5"])   # YAML < --config < overrides
    retriever = ragrig.Retriever(cfg)                                     # the published index version
    result = retriever.search("how do I …?")                              # hits with per-source ranks
    reports = ragrig.evaluate(cfg, ["datasets/testsets/mine.yaml"])       # metrics per query, tag, overall

``evaluate(cfg, testsets=None, *, repeats=None, max_hops=None, label="", log=RunOptions(), ...)`` returns one
``EvalReport`` per test set (paths, or loaded test sets; default ``eval.testsets``), and logs each to MLflow
when ``cfg.mlflow.enabled`` (``log=None``: never). It is ``ragrig.eval.evaluate.evaluate_testsets``, the
same sequence ``ragrig eval`` runs.

Names are imported on first use, so ``import ragrig`` stays cheap (no torch, Chroma or Prefect).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> "module" (the same name there) or "module:attribute"
_EXPORTS = {
    "load_config": "ragrig.configs.load",
    "RagrigConfig": "ragrig.configs.models",
    "Retriever": "ragrig.retrieval.search.retriever",
    "RetrievalResult": "ragrig.retrieval.results",
    "Hit": "ragrig.retrieval.results",
    "Filters": "ragrig.retrieval.filters",
    "evaluate": "ragrig.eval.evaluate:evaluate_testsets",
    "RagrigError": "ragrig.configs.errors",
    "InputError": "ragrig.configs.errors",
}

__all__ = ["Filters", "Hit", "InputError", "RagrigConfig", "RagrigError", "RetrievalResult", "Retriever", "evaluate",
           "load_config"]

if TYPE_CHECKING:  # pragma: no cover
    from ragrig.configs.errors import InputError, RagrigError
    from ragrig.configs.load import load_config
    from ragrig.configs.models import RagrigConfig
    from ragrig.eval.evaluate import evaluate_testsets as evaluate
    from ragrig.retrieval.results import Hit, RetrievalResult
    from ragrig.retrieval.filters import Filters
    from ragrig.retrieval.search.retriever import Retriever


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'ragrig' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(import_module(module), attribute or name)
    globals()[name] = value
    return value
