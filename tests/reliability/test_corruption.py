"""Issue 19, item 8: hand-made corruptions of a published index. For each: what ``ragrig health`` says, what a
query does before the repair (one clear line, exit 1, never a traceback), and what ``ragrig ingest`` does
(verifies the version it would keep against its manifest, rebuilds a damaged one: healthy again, queries
answer). Before, ingest said "unchanged" over a truncated chunks table, a deleted store or a deleted bm25/,
health called a truncated documents table and a garbage keyword library healthy, a CURRENT naming a missing
version blocked every command, and a garbage manifest crashed ingest.

``RAGRIG_CORRUPTION_TABLE=FILE`` writes the observed table (Markdown rows) for docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from ragrig.flows.cli import main
from ragrig.retrieval.index import chroma
from ragrig.retrieval.index.layout import Layout

pytestmark = pytest.mark.slow

DOCS = {
    "a.md": "# Alpha\n\n## Moving\n\nMove six inches.\n\n## Charging\n\nCharge into engagement range.\n",
    "b.md": "# Beta\n\n## Shooting\n\nRoll attack dice against a visible target.\n",
}


def cut(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def drop_last_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))


def delete_collection(layout: Layout, cfg) -> None:
    client = chroma.chroma_client(cfg.index.chroma, layout.chroma_dir)
    client.delete_collection(f"{layout.key}-v000001")


V1 = "versions/v000001"
# name -> (corrupt(layout, cfg), what health says, what a query says) - fragments of the one line each prints
CORRUPTIONS: dict[str, tuple[Callable, str, str]] = {
    "chunks.jsonl cut in half": (lambda lay, cfg: cut(lay.version_dir("v000001") / "chunks.jsonl"),
                                 "chunks.jsonl does not match the manifest", "chunks.jsonl does not match"),
    "chunks.jsonl without its last line": (lambda lay, cfg: drop_last_line(lay.version_dir("v000001") / "chunks.jsonl"),
                                           "manifest says 3 chunks, the table has 2", "chunks.jsonl does not match"),
    "documents.jsonl cut in half": (lambda lay, cfg: cut(lay.version_dir("v000001") / "documents.jsonl"),
                                    "documents.jsonl does not match", "documents.jsonl does not match"),
    "keywords.json garbage": (lambda lay, cfg: (lay.version_dir("v000001") / "keywords.json").write_text("{oops"),
                              "keyword library unreadable", "keywords.json does not match"),
    "bm25/ deleted": (lambda lay, cfg: shutil.rmtree(lay.version_dir("v000001") / "bm25"),
                      "bm25/ is missing", "bm25/ is missing"),
    "a bm25 file overwritten": (lambda lay, cfg: (lay.version_dir("v000001") / "bm25" / "data.csc.index.npy")
                                .write_bytes(b"\x93NUMPY junk"),
                                "bm25/data.csc.index.npy does not match", "bm25/data.csc.index.npy does not match"),
    "Chroma folder deleted": (lambda lay, cfg: (chroma.forget_client(cfg.index.chroma, lay.chroma_dir),
                                                shutil.rmtree(lay.chroma_dir)),
                              "the Chroma store", "the Chroma store"),
    "Chroma collection deleted": (delete_collection, "Chroma collection", "Chroma collection"),
    "manifest.json garbage": (lambda lay, cfg: (lay.version_dir("v000001") / "manifest.json").write_text("garbage"),
                              "manifest.json is unreadable", "manifest.json is unreadable"),
    "manifest.json valid JSON, wrong shape": (lambda lay, cfg: (lay.version_dir("v000001") / "manifest.json")
                                              .write_text('{"version": "v000001"}'),
                                              "manifest.json is damaged", "manifest.json is damaged"),
    "CURRENT names a missing version": (lambda lay, cfg: lay.current_file.write_text("v000042\n"),
                                        "CURRENT names a version that is missing",
                                        "CURRENT names v000042, which is missing"),
    "CURRENT garbage": (lambda lay, cfg: lay.current_file.write_text("hello\n"),
                        "does not name a version", "does not name a version"),
    "version folder deleted": (lambda lay, cfg: shutil.rmtree(lay.version_dir("v000001")),
                               "CURRENT names a version that is missing", "CURRENT names v000001, which is missing"),
}

TABLE: list[str] = []


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


def cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# written by a config that reads Chroma, so the version has a collection to damage (the default writes none);
# everything after runs on the default config
BUILD = "index.vector_search.mode=chroma"


@pytest.fixture
def indexed(published, make_config):
    """DOCS published in this test's home (a copy of one ingest per test process: conftest ``published``)."""
    corpus = published(DOCS, BUILD)
    return make_config(corpus), corpus


@pytest.fixture
def indexed_own_corpus(tmp_path, write_files, make_config):
    """The same, ingested here over a corpus of this test's own: for the tests that add a document to it."""
    corpus = write_files(tmp_path / "corpus", DOCS)
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus), "--set", BUILD]) == 0
    return make_config(corpus), corpus


# Damage to the Chroma store alone: a version stores its own vectors, so the default search answers; a query
# searched through Chroma (index.vector_search.mode: chroma) is the one line; health names it, ingest rebuilds it.
CHROMA_ONLY = {"Chroma folder deleted", "Chroma collection deleted"}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_each_corruption_is_named_by_health_one_line_for_a_query_and_rebuilt_by_ingest(name, indexed, capsys,
                                                                                       tmp_path):
    cfg, corpus = indexed
    layout = Layout(cfg)
    corrupt, health_says, query_says = CORRUPTIONS[name]
    capsys.readouterr()
    corrupt(layout, cfg)

    rc, out, err = cli(["health", *sets(corpus)], capsys)
    assert rc == 1 and "UNHEALTHY" in out and health_says in out, out
    health_line = next(line.strip(" -") for line in out.splitlines() if health_says in line)

    if name in CHROMA_ONLY:  # the version's own files are whole: the default (exact) search still answers from them
        rc, out, err = cli(["query", "move", "--json", *sets(corpus)], capsys)
        assert rc == 0 and json.loads(out)["hits"][0]["doc_id"] == "a.md", err
    search = ["--set", "index.vector_search.mode=chroma"] if name in CHROMA_ONLY else []  # a query that needs it
    rc, out, err = cli(["query", "move", *sets(corpus), *search], capsys)
    assert rc == 1 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and query_says in lines[0], err
    assert "`ragrig ingest` rebuilds it" in lines[0] or "run `ragrig ingest` to rebuild it" in lines[0], lines[0]

    stats_file = tmp_path / "stats.json"
    rc, out, err = cli(["ingest", "--no-prefect", "-q", *sets(corpus), "--output-json", str(stats_file)], capsys)
    assert rc == 0, err
    stats = json.loads(stats_file.read_text())
    assert stats["published"] and stats["repaired"] in ("v000001", "v000042", "CURRENT"), stats
    assert stats["version"] in ("v000002", "v000043") and stats["docs_failed"] == 0, stats  # never a reused number
    assert any("damaged" in w and "rebuilding" in w for w in stats["warnings"]), stats["warnings"]

    rc, out, _ = cli(["health", *sets(corpus)], capsys)
    assert rc == 0 and "healthy" in out, out
    rc, out, err = cli(["query", "move", "--json", *sets(corpus)], capsys)
    assert rc == 0, err
    assert json.loads(out)["hits"][0]["doc_id"] == "a.md"
    # and the next ingest keeps the repaired version
    rc, _, _ = cli(["ingest", "--no-prefect", "-q", *sets(corpus), "--output-json", str(stats_file)], capsys)
    assert rc == 0 and not json.loads(stats_file.read_text())["published"]

    warning = next(w for w in stats["warnings"] if "damaged" in w)
    TABLE.append(f"| {name} | {health_line} | rebuilt: {stats['repaired']} → {stats['version']} "
                 f"({warning.split(' (', 1)[1].split('): rebuilding')[0]}) | `{lines[0]}` |")
    out_file = os.environ.get("RAGRIG_CORRUPTION_TABLE")
    if out_file:
        Path(out_file).write_text("\n".join(TABLE) + "\n")


@pytest.mark.parametrize("which", ["embeddings.sqlite", "extract.sqlite"])
def test_a_corrupt_cache_file_is_one_line_that_names_it_and_says_deleting_it_is_safe(which, indexed_own_corpus,
                                                                                   capsys):
    cfg, corpus = indexed_own_corpus
    layout = Layout(cfg)
    path = layout.cache_dir / which
    for p in layout.cache_dir.glob(f"{which}*"):
        p.unlink()
    path.write_bytes(b"this is not a database" * 100)
    (corpus / "c.md").write_text("# Gamma\n\n## New\n\nA new document to extract and embed.\n")
    capsys.readouterr()
    rc, out, err = cli(["ingest", "--no-prefect", "-q", *sets(corpus)], capsys)
    assert rc == 1 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"cache {path} is damaged" in lines[0] and "deleting it is safe" in lines[0], err
    rc, out, _ = cli(["health", *sets(corpus)], capsys)
    assert rc == 0  # the published index never depended on a cache
    for p in layout.cache_dir.glob(f"{which}*"):
        p.unlink()
    assert main(["ingest", "--no-prefect", "-q", *sets(corpus)]) == 0


def test_a_cache_damaged_inside_a_valid_database_is_the_same_clear_line(indexed_own_corpus, capsys):
    cfg, corpus = indexed_own_corpus
    path = Layout(cfg).extract_cache
    db = sqlite3.connect(path)
    db.execute("DROP TABLE docs")
    db.execute("CREATE TABLE docs (nonsense TEXT)")
    db.commit()
    db.close()
    (corpus / "c.md").write_text("# Gamma\n\n## New\n\nA new document to extract and embed.\n")
    capsys.readouterr()
    rc, _, err = cli(["ingest", "--no-prefect", "-q", *sets(corpus)], capsys)
    assert rc == 1 and "Traceback" not in err and f"cache {path} is damaged" in err, err
