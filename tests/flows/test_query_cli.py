"""`ragrig query`: the table (per-source ranks), --debug, --context and --json."""

from __future__ import annotations

import json
import re

import pytest
from ragrig.flows.cli import main

pytestmark = pytest.mark.slow
DOCS = {"w.md": "# Weapons\n\n## Lethal x+\n\nSuccesses on x+ are critical.\n\n## Balanced\n\nRe-roll one attack die.\n"}


def test_query_table_debug_context_and_json(tmp_path, write_files, capsys):
    corpus = write_files(tmp_path / "corpus", DOCS)
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    assert main(["ingest", "--no-prefect", "-q", *sets]) == 0
    capsys.readouterr()
    assert main(["query", "lethal 5+", "--debug", "-k", "2", *sets]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if re.match(r"^│ +1 │", line))
    assert "Lethal x+" in row and re.search(r"│ +1 │ +1 │ +\d+ │$", row.rstrip())  # bm25, vector, vector2 ranks
    head = next(line for line in out.splitlines() if "score" in line)
    # a column per source that ranked a hit (the default's three: no header)
    assert re.findall(r"\w+", head)[-3:] == ["bm25", "vector", "vector2"]
    assert "normalised query: Lethal 5+" in out and "timings (ms):" in out and "candidates:" in out
    assert main(["query", "lethal 5+", "--context", "--context-tokens", "200", *sets]) == 0
    assert capsys.readouterr().out.startswith("[1] w.md — Weapons > Lethal x+")
    assert main(["query", "lethal 5+", "--json", "-k", "1", *sets]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["hits"][0]["header_path"] == ["Weapons", "Lethal x+"] and res["hits"][0]["sources"]["bm25"]["rank"] == 1


@pytest.mark.parametrize("args, says", [
    (["-k", "-3"], "top_k must be an integer from 1 to 1000 (got -3)"),
    (["-k", "0"], "top_k must be an integer from 1 to 1000 (got 0)"),
    (["--max-hops", "9"], "max_hops must be an integer from 0 to 5 (got 9)"),
    (["--context", "--context-tokens", "-5"], "the context budget must be a positive number of tokens (got -5)"),
])
def test_out_of_range_arguments_are_one_line_and_exit_2(tmp_path, write_files, capsys, args, says):
    corpus = write_files(tmp_path / "corpus", DOCS)
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    assert main(["ingest", "--no-prefect", "-q", *sets]) == 0
    capsys.readouterr()
    assert main(["query", "lethal 5+", *args, *sets]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [f"error: {says}"]
