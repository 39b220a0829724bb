"""Issue 19, item 9: each of these was a traceback or a silent accept; each is now a clear error or does what
it says. Bad config values (NaN, infinities, booleans for numbers, an empty corpus.path) are in
test_bad_input.py's table; corrupt cache files in test_corruption.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ragrig.flows.cli import main

ROOT = Path(__file__).resolve().parents[2]


def sets(corpus) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


@pytest.mark.slow
def test_an_empty_corpus_is_one_clear_error_and_leaves_nothing_half_written(tmp_path, capsys, ragrig_home):
    corpus = tmp_path / "empty"
    corpus.mkdir()
    (corpus / "notes.xyz").write_text("not a document type ragrig reads")
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: corpus.path: no documents in") and "nothing to index" in err and len(
        err.splitlines()) == 1, err
    assert not list(ragrig_home.rglob(".tmp-*")) and not list(ragrig_home.rglob("manifest.json"))


@pytest.mark.slow
def test_a_version_with_zero_chunks_is_published_and_answers_nothing(tmp_path, capsys, embedder):
    """Documents that yield no chunk (a title and nothing else): bm25s raised ValueError on the empty corpus
    and left a .tmp- folder."""
    from ragrig.retrieval.index.health import check_index
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Only a title\n")
    from ragrig.configs.load import load_config

    cfg = load_config(overrides=[a for a in sets(corpus) if a != "--set"])
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    stats = pipe.run()
    assert stats.published and stats.chunks == 0 and any("no chunks" in w for w in stats.warnings)
    assert check_index(cfg).ok
    res = Retriever(cfg, embedder=embedder).search("anything at all")
    assert res.hits == [] and res.version == "v000001"
    assert main(["query", "anything", *sets(corpus)]) == 0
    # a document with text added later makes a normal version
    (corpus / "a.md").write_text("# Only a title\n\n## Now\n\nSome text.\n")
    pipe = IngestPipeline(cfg)
    pipe.embedder = embedder
    assert pipe.run().chunks == 1


@pytest.mark.slow
def test_frontmatter_false_keeps_frontmatter_out_of_chunks(tmp_path, make_config, embedder):
    """``chunking.frontmatter: false`` used to change nothing but the index key."""
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.filters import Filters
    from ragrig.retrieval.search.retriever import Retriever

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("---\ntitle: Secret Title\ncategory: core\n---\nIntro text.\n\n## Moving\n\nMove.\n")
    chunks = {}
    for flag in (True, False):
        cfg = make_config(corpus, chunking__frontmatter=flag)
        pipe = IngestPipeline(cfg)
        pipe.embedder = embedder
        pipe.run()
        v = IndexVersion.current(cfg)
        chunks[flag] = v.chunks
        found = Retriever(cfg, version=v, embedder=embedder).search(
            "move", filters=Filters(fields=(("category", "core"),)))
        assert bool(found.hits) is flag
    assert chunks[True][0].metadata == {"title": "Secret Title", "category": "core", "format": "md"}
    assert chunks[True][0].header_path == ["Secret Title"]  # the text before the first header, under the title
    assert all(c.metadata == {"format": "md"} for c in chunks[False])
    assert chunks[False][0].header_path == [] and "Secret Title" not in chunks[False][0].search_text


def test_zero_width_non_joiner_is_a_letter_in_queries():
    from ragrig.retrieval.search.query import validate_query

    persian = "می\u200cخواهم حرکت کنم"  # "I want to move": ZWNJ joins the prefix to the verb
    assert validate_query(persian) == persian
    assert validate_query("a\u200db") == "a\u200db"


@pytest.mark.parametrize("qrels, queries, pattern", [
    ("q1\td1\tinf\n", '{"_id": "q1", "text": "x"}\n', r"test\.tsv:2: score 'inf' is not a finite whole number"),
    ("q1\td1\tnan\n", '{"_id": "q1", "text": "x"}\n', r"test\.tsv:2: score 'nan' is not a finite whole number"),
    ("q1\td1\t1.5\n", '{"_id": "q1", "text": "x"}\n', r"test\.tsv:2: score '1.5' is not a finite whole number"),
    ("q1\td1\t11\n", '{"_id": "q1", "text": "x"}\n', r"test\.tsv:2: score '11' is above 10"),
    ("q 1\td1\t1\n", '{"_id": "q 1", "text": "x"}\n', r"test\.tsv:2: query-id 'q 1' cannot be a test case id"),
    ("a/b\td1\t1\n", '{"_id": "a/b", "text": "x"}\n', r"test\.tsv:2: query-id 'a/b' cannot be a test case id"),
])
def test_import_beir_refuses_ids_and_scores_it_cannot_keep(qrels, queries, pattern, tmp_path, capsys):
    import re

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text(queries)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    assert main(["import-beir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert re.search(pattern, err) and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_import_beir_keeps_corpus_ids_with_spaces_and_slashes(tmp_path, capsys):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc one/part 2\t2\nq1\td0\t0\n")
    from ragrig.eval.testset import import_beir

    ts = import_beir(folder)
    assert [(e.doc, e.grade) for e in ts.cases[0].expect] == [("doc one/part 2", 2)]  # corpus ids match as they are


KILLED_SWEEP = """
import os, signal, sys
from ragrig.configs.load import load_config
from ragrig.eval.sweep.parent import start_parent
from ragrig.eval.sweep.spec import SweepSpec
cfg = load_config(overrides=["retrieval.synonyms=null", "eval.testsets=[]"])
start_parent(cfg, SweepSpec(name="killed", grid={"retrieval.top_k": [5, 10]}))
os.kill(os.getpid(), signal.SIGKILL)   # the sweep dies with its parent run open
"""


@pytest.mark.slow
def test_mlflow_runs_left_running_by_a_killed_process_are_marked_failed_on_the_next_run(tmp_path, make_report):
    import mlflow
    from ragrig.configs.load import load_config
    from ragrig.eval.tracking.runs import RunOptions, log_report

    proc = subprocess.Popen([sys.executable, "-c", KILLED_SWEEP], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, stderr[-2000:]
    cfg = load_config(overrides=["retrieval.synonyms=null", "eval.testsets=[]"])
    from ragrig.eval.tracking.store import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(cfg))
    [orphan] = mlflow.search_runs(search_all_experiments=True, output_format="list")
    assert orphan.info.status == "RUNNING" and orphan.data.tags["ragrig.pid"] == str(proc.pid)
    log_report(cfg, make_report(), RunOptions(plots=False))  # the next evaluation on this host
    runs = {r.info.run_id: r for r in mlflow.search_runs(search_all_experiments=True, output_format="list")}
    assert runs[orphan.info.run_id].info.status == "FAILED"
    assert "ended without finishing this run" in runs[orphan.info.run_id].data.tags["ragrig.failed_reason"]
    assert sorted(r.info.status for r in runs.values()) == ["FAILED", "FINISHED"]


def test_a_run_whose_owner_is_alive_is_left_alone():
    from ragrig.eval.tracking.orphans import owner_alive, process_started

    me = os.getpid()
    assert owner_alive(me, process_started(me))
    assert not owner_alive(me, "1")  # the same pid, another start time: a reused pid, not the owner
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not owner_alive(child.pid, "")


def test_a_dotless_i_in_a_query_is_matched_as_i_not_a_crash(published, capsys):
    """re.I matches "ı" and "İ" to "i", casefold does not: a query naming a keyword-library term with one (a
    Turkish keyboard's "ı") was 'error: KeyError' from the query's normalisation and the multi-hop judge."""
    import json

    corpus = published({"rules.md": "# Rules\n\n## Piercing x\n\nPiercing x removes x defence dice.\n\n"
                           "## Cover\n\nCover gives a defence die. Piercing 1 ignores one of them.\n"})
    capsys.readouterr()
    rc = main(["query", "what does pıercing 1 do", "--json", "--local", "--set", f"corpus.path={corpus}",
               "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    result = json.loads(out.out)
    assert result["normalized"].startswith("what does Piercing 1")
    assert "Piercing x" in [h["header_path"][-1] for h in result["hits"]]
