"""Shared fixtures: an isolated ragrig home per test, offline/quiet library settings, config and embedder helpers."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

# Process-wide settings that libraries read at import time (Prefect reads its settings when first
# imported, huggingface_hub its offline flag), so they are set before any test module imports them.
from ragrig.flows.environment import QUIET_ENV  # noqa: E402 - imports nothing heavy

_SESSION_ENV = {**QUIET_ENV, "HF_HUB_OFFLINE": "1"}
os.environ.update(_SESSION_ENV)
# Keep Prefect's profile/DB out of the user's ~/.prefect (the CLI's setdefault then keeps this one).
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="ragrig-test-prefect-")

_PER_TEST_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_VERBOSITY",
    "HF_HUB_DISABLE_PROGRESS_BARS",
    "ANONYMIZED_TELEMETRY",
    "MLFLOW_DISABLE_TELEMETRY",
    "RAGAS_DO_NOT_TRACK",
)


@pytest.fixture(autouse=True)
def ragrig_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own RAGRIG_HOME (indexes, caches, MLflow) and the offline/quiet env."""
    home = tmp_path / "ragrig-home"
    monkeypatch.setenv("RAGRIG_HOME", str(home))
    for key in _PER_TEST_ENV:
        monkeypatch.setenv(key, _SESSION_ENV[key])
    return home


def _yaml_value(value: Any) -> str:
    """A --set value: strings verbatim, everything else as JSON (which is valid YAML)."""
    return value if isinstance(value, str) else json.dumps(value)


@pytest.fixture
def make_config(tmp_path: Path):
    """Factory: ``make_config(corpus_dir=None, *sets, **overrides)`` -> a validated RagrigConfig.

    ``corpus.path`` points at ``corpus_dir`` (default ``tmp_path/"corpus"``), synonyms and test sets
    are switched off. ``overrides`` use ``__`` for dots (``chunking__max_header_level=2``); ``sets``
    are raw ``key.path=value`` strings.
    """
    from ragrig.configs.load import load_config

    def _make(corpus_dir: str | Path | None = None, *sets: str, **overrides: Any):
        corpus = Path(corpus_dir) if corpus_dir is not None else tmp_path / "corpus"
        items = [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]"]
        items += [f"{k.replace('__', '.')}={_yaml_value(v)}" for k, v in overrides.items()]
        items += list(sets)
        return load_config(overrides=items)

    return _make


@pytest.fixture(scope="session")
def embedder():
    """The real packaged MiniLM model, loaded once per session (for tests that need real tokens)."""
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.embedding import Embedder

    e = Embedder(EmbeddingConfig())
    _ = e.window  # load now, so the first test using it is not billed for it
    return e


def _write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def write_files():
    """``write_files(root, {relative path: text or bytes})`` writes the files below root and returns root."""
    return _write_files
