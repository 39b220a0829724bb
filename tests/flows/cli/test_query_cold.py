"""A cold `ragrig query` loads only what one question needs: no Prefect, MLflow, numba, Chroma, FastAPI, bm25s or
scipy in the process (the BM25 index is read by ``index/bm25_read.py``), nor sentence-transformers and
transformers (the ingest recorded the lean forward equal to them: ``encoders/forward_check.py``; torch is the
model's floor; a later ingest needs neither either), and the process ends as soon as its answer is out (no
interpreter teardown) with the answer unchanged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow
DOCS = {"w.md": "# Weapons\n\n## Lethal x+\n\nSuccesses on x+ are critical.\n\n## Balanced\n\nRe-roll one attack die.\n"}
HEAVY = ("prefect", "mlflow", "numba", "chromadb", "fastapi", "sentence_transformers", "transformers", "sklearn",
         "bm25s", "scipy")
PROBE = """
import json, sys
from ragrig.flows.cli import main
code = main(sys.argv[1:])
print("MODULES " + json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(%r))))
sys.exit(code)
""" % (HEAVY,)


@pytest.fixture
def index(tmp_path, write_files, capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]",
            "--set", f"home={tmp_path / 'home'}"]
    assert main(["ingest", "--no-prefect", "-q", *sets]) == 0
    capsys.readouterr()
    return sets


def _run(args, **kw):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("RAGRIG_SERVER_URL", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=600, **kw)


def test_a_single_query_imports_no_prefect_mlflow_or_numba(index, capsys):
    got = _run(["-c", PROBE, "query", "lethal 5+", "--json", "-k", "1", *index])
    assert got.returncode == 0, got.stderr
    out, modules = got.stdout.rsplit("MODULES ", 1)
    assert json.loads(modules) == []
    assert json.loads(out)["hits"][0]["header_path"] == ["Weapons", "Lethal x+"]


def test_an_ingest_after_the_verdict_imports_no_sentence_transformers(index, capsys):
    probe = PROBE.replace("set(%r)" % (HEAVY,), "{'sentence_transformers', 'transformers', 'sklearn'}")
    corpus = next(s.split("=", 1)[1] for s in index if s.startswith("corpus.path="))
    (Path(corpus) / "armour.md").write_text("# Armour\n\n## Heavy\n\nSaves on 2+ against blasts.\n")
    got = _run(["-c", probe, "ingest", "--no-prefect", "-q", *index])  # a new document embedded, lean
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout.rsplit("MODULES ", 1)[1]) == []
    assert main(["query", "lethal 5+", "--json", "-k", "1", *index]) == 0  # the version it wrote answers
    assert json.loads(capsys.readouterr().out)["hits"][0]["header_path"] == ["Weapons", "Lethal x+"]


def _rounded(value):
    """``value`` with every float rounded to 5 decimals (cross-process float noise is ~1e-7), timings dropped."""
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items() if k not in ("timings_ms", "ms")}  # a hop's "ms" too
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_the_quick_exit_prints_the_same_answer_and_exit_code(index, capsys):
    for args in (["--json", "-k", "2"], ["--debug", "-k", "2"], ["--context"]):
        assert main(["query", "lethal 5+", *args, *index]) == 0
        expected = capsys.readouterr().out
        got = _run(["-m", "ragrig", "query", "lethal 5+", *args, *index])
        assert got.returncode == 0 and got.stderr == ""
        timings = re.compile(r"timings \(ms\):.*|\"timings_ms\": \{[^}]*\}")  # timings differ run to run
        if "--json" in args:  # another process encodes the query with its own torch threads: scores may differ
            assert _rounded(json.loads(got.stdout)) == _rounded(json.loads(expected))
        else:  # in the last float bits (1e-7); the hits, their order and everything printed must not
            assert timings.sub("", got.stdout) == timings.sub("", expected)
    # an error still exits 2 with its one line
    bad = _run(["-m", "ragrig", "query", "lethal 5+", "-k", "0", *index])
    assert bad.returncode == 2 and bad.stderr.strip() == "error: top_k must be an integer from 1 to 1000 (got 0)"
