"""Bad configs and test sets: each gives one clear message naming the file, the line and the field, exits 2,
and writes nothing (no index, no cache, no MLflow store)."""

from __future__ import annotations

import re

import pytest
from ragrig.flows.cli import main

GOOD_CASE = "  - id: a\n    query: how do I move?\n    expect: [{doc: rules.md, section: Moving}]\n"

# (name, config text, --set items, expected message fragments as regexes)
BAD_CONFIGS = [
    ("unknown top-level key", "colour: blue\n", [], [r"cfg\.yaml:1: colour: unknown key"]),
    ("unknown nested key", "chunking:\n  max_tokenz: 100\n", [], [r"cfg\.yaml:2: chunking\.max_tokenz: unknown key"]),
    ("wrong type", "retrieval:\n  top_k: ten\n", [], [r"cfg\.yaml:2: retrieval\.top_k: .*integer.*'ten'"]),
    ("out of range", "chunking:\n  max_header_level: 7\n", [], [r"cfg\.yaml:2: chunking\.max_header_level: .*less than or equal to 4"]),
    ("malformed YAML", "retrieval:\n  top_k: [1, 2\n", [], [r"cfg\.yaml:\d+: malformed YAML"]),
    ("duplicate key", "retrieval:\n  top_k: 5\n  top_k: 6\n", [], [r"cfg\.yaml:3: duplicate key 'top_k' \(first at line 2\)"]),
    ("not a mapping", "- a\n- b\n", [], [r"cfg\.yaml: a config must be a YAML mapping"]),
    ("unknown fusion source", "retrieval:\n  fusion:\n    weights: {bm25: 1, sparse: 1}\n", [],
     [r"cfg\.yaml:3: retrieval\.fusion\.weights: .*unknown source\(s\) \['sparse'\]"]),
    ("adaptive min > max", "retrieval:\n  adaptive: {min_results: 9, max_results: 3}\n", [],
     [r"cfg\.yaml:2: retrieval\.adaptive: .*min_results \(9\) > max_results \(3\)"]),
    ("negative rrf k", "retrieval:\n  fusion: {rrf_k: -1}\n", [], [r"cfg\.yaml:2: retrieval\.fusion\.rrf_k: .*greater than 0"]),
    ("unknown --set key", "", ["retrieval.nope=1"], [r"--set 'retrieval\.nope=1': unknown key 'retrieval\.nope'"]),
    ("--set without =", "", ["retrieval.top_k"], [r"--set 'retrieval\.top_k': expected KEY\.PATH=VALUE"]),
    ("missing corpus", "corpus:\n  path: /nonexistent/corpus\n", [], [r"corpus\.path: /nonexistent/corpus does not exist"]),
    ("bad synonyms file", "retrieval:\n  synonyms: syn.yaml\n", [], [r"syn\.yaml:1: 'heal' must map to a list of non-empty strings"]),
    # issue 19, item 9: each of these was accepted
    ("NaN", "retrieval:\n  min_relevance: .nan\n", [], [r"cfg\.yaml:2: retrieval\.min_relevance: .*finite number"]),
    ("infinity", "corpus:\n  max_file_mb: .inf\n", [], [r"cfg\.yaml:2: corpus\.max_file_mb: .*finite number"]),
    ("infinite weight", "", ["retrieval.fusion.weights={bm25: .inf, vector: 1}"],
     [r"--set 'retrieval\.fusion\.weights=\{bm25: \.inf, vector: 1\}'|--set retrieval\.fusion\.weights=.*: "
      r"retrieval\.fusion\.weights\.bm25: .*finite number"]),
    ("boolean for a number", "retrieval:\n  top_k: true\n", [],
     [r"cfg\.yaml:2: retrieval\.top_k: .*expected a number, got a boolean"]),
    ("--set boolean for a number", "", ["retrieval.top_k=true"],
     [r"--set retrieval\.top_k=true: retrieval\.top_k: .*expected a number, got a boolean"]),
    ("empty corpus.path", "corpus:\n  path: ''\n", [], [r"cfg\.yaml:2: corpus\.path: .*at least 1 character"]),
    ("blank corpus.path", "", ["corpus.path=   "], [r"corpus\.path: "]),
]

BAD_TESTSETS = [
    ("duplicate case ids", "name: t\ncases:\n" + GOOD_CASE + GOOD_CASE, [r"ts\.yaml:6: duplicate case id 'a' \(first as case #1\)"]),
    ("missing query", "name: t\ncases:\n  - id: a\n    expect: [{doc: rules.md}]\n", [r"ts\.yaml:3: case 'a' cases\.0\.query: Field required"]),
    ("empty expect", "name: t\ncases:\n  - id: a\n    query: q\n    expect: []\n", [r"ts\.yaml:5: case 'a' cases\.0\.expect: .*at least 1"]),
    ("bad grade", "name: t\ncases:\n  - id: a\n    query: q\n    expect: [{doc: rules.md, grade: 0}]\n",
     [r"ts\.yaml:5: case 'a' cases\.0\.expect\.0\.grade: .*greater than or equal to 1"]),
    ("unknown field", "name: t\ncases:\n  - id: a\n    query: q\n    expect: [{doc: rules.md}]\n    tagz: [x]\n",
     [r"ts\.yaml:6: case 'a' cases\.0\.tagz: unknown field"]),
    ("malformed test set", "name: t\ncases:\n  - id: a\n    query: \"unclosed\n", [r"ts\.yaml:\d+: malformed YAML"]),
    ("no cases", "name: t\ncases: []\n", [r"ts\.yaml:2: cases: .*at least 1"]),
]


def run_cli(args, capsys) -> tuple[int, str]:
    rc = main(args)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("name, text, sets, patterns", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config(name, text, sets, patterns, tmp_path, ragrig_home, capsys, monkeypatch):
    monkeypatch.delenv("PREFECT_HOME")  # as for a user: the CLI would default it to <home>/prefect
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text)
    (tmp_path / "syn.yaml").write_text("heal: 5\n")
    rc, err = run_cli(["ingest", "--no-prefect", "-q", "-c", str(cfg), *sum((["--set", s] for s in sets), [])], capsys)
    assert rc == 2, err
    assert err.startswith("error: ")
    for pat in patterns:
        assert re.search(pat, err), (pat, err)
    assert not ragrig_home.exists(), "a failed validation wrote state"


@pytest.mark.parametrize("name, text, patterns", BAD_TESTSETS, ids=[c[0] for c in BAD_TESTSETS])
def test_bad_testset(name, text, patterns, tmp_path, ragrig_home, capsys, monkeypatch):
    monkeypatch.delenv("PREFECT_HOME")  # as for a user: the CLI would default it to <home>/prefect
    ts = tmp_path / "ts.yaml"
    ts.write_text(text)
    rc, err = run_cli(["eval", "--testset", str(ts), "--set", "retrieval.synonyms=null"], capsys)
    assert rc == 2, err
    for pat in patterns:
        assert re.search(pat, err), (pat, err)
    assert not ragrig_home.exists(), "a failed validation wrote state"


@pytest.mark.slow
@pytest.mark.parametrize(
    "expect, pattern",
    [
        ("{doc: rules.md, section: Flying}", r"case 'a' expect\[0\]: section 'Flying' matches no header in 'rules.md'"),
        ("{doc: rules.md, section: Cover}", r"section 'Cover' matches 2 headers in 'rules.md' .*use a longer header-path suffix"),
        ("{doc: missing.md}", r"case 'a' expect\[0\]: doc 'missing.md' is not in the index"),
    ],
)
def test_unresolvable_expectations_fail_before_logging(expect, pattern, tmp_path, write_files, make_config, embedder,
                                                       ragrig_home, capsys):
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    corpus = write_files(tmp_path / "corpus", {"rules.md": "# Rules\n\n## Moving\n\nMove.\n\n## A\n\n### Cover\n\nx\n\n## B\n\n### Cover\n\ny\n"})
    pipe = IngestPipeline(make_config(corpus))
    pipe.embedder = embedder
    pipe.run()
    ts = tmp_path / "ts.yaml"
    ts.write_text(f"name: t\ncases:\n  - id: a\n    query: q\n    expect: [{expect}]\n")
    rc, err = run_cli(["eval", "--no-prefect", "--testset", str(ts), "--set", f"corpus.path={corpus}",
                       "--set", "retrieval.synonyms=null"], capsys)
    assert rc == 2 and re.search(pattern, err), err
    assert not (ragrig_home / "mlflow").exists()
