"""A missing corpus is said at once: `ingest`, `run` and `validate` check corpus.path before they import Prefect,
torch or docling (each took 11-22 s of a 2-core machine to say it, since the check sat inside the pipeline)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "prefect", "docling", "sentence_transformers")


@pytest.mark.parametrize("argv", [["ingest", "-q"], ["run"], ["validate"], ["ingest", "--no-prefect", "-q"]])
def test_a_missing_corpus_is_one_line_before_any_heavy_import(argv, tmp_path):
    missing = tmp_path / "no-corpus"
    code = ("import json, sys\nfrom ragrig.flows.cli import main\n"
            f"rc = main({[*argv, '--set', f'corpus.path={missing}']!r})\n"
            f"print(json.dumps([rc, [m for m in {HEAVY!r} if m in sys.modules]]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    rc, loaded = json.loads(p.stdout.strip().splitlines()[-1])
    assert rc == 2 and loaded == [], (rc, loaded, p.stderr[-500:])
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines == [f"error: corpus.path: {missing} does not exist (check the path, or that ../shared is beside "
                     "the repo)"], p.stderr[-1000:]
