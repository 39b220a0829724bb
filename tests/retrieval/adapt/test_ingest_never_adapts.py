"""Scheduled re-ingestion never retrains: no ingest code path imports the adapt library, and an ingest (twice:
the second is what a schedule does) runs with every adapt entry point trapped."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
INGEST_CODE = [*sorted((ROOT / "retrieval" / "ingest").glob("*.py")), ROOT / "flows" / "ingest.py",
               ROOT / "flows" / "cli" / "ingest.py", *sorted((ROOT / "tasks").glob("*.py"))]


def test_no_ingest_module_imports_adapt() -> None:
    for path in INGEST_CODE:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any("adapt" in n for n in names), (path, names)


@pytest.mark.slow
def test_an_ingest_and_a_reingest_never_train(make_config, write_files, tmp_path, monkeypatch) -> None:
    from ragrig.retrieval.adapt import run, train
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    def trap(*a, **k):
        raise AssertionError("ingest called adapt")

    for mod, name in [(run, "adapt"), (run, "prepare"), (run, "fit"), (train, "train"), (run, "train")]:
        monkeypatch.setattr(mod, name, trap)
    write_files(tmp_path / "corpus", {"a.md": "# A\n\n## One\n\nFirst section text here.\n\n## Two\n\nSecond one.\n"})
    cfg = make_config()
    assert IngestPipeline(cfg, progress=False).run().published
    (tmp_path / "corpus" / "a.md").write_text("# A\n\n## One\n\nChanged text here.\n", encoding="utf-8")
    assert IngestPipeline(cfg, progress=False).run().published
