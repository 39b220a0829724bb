"""YAML test sets: the sample set, validation errors that name file/line/case/field, BEIR import, dumping."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.testset import KNOWN_TAGS, dump_testset, import_beir, load_testset

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "testsets" / "sample.yaml"


def test_sample_testset_loads():
    ts = load_testset(SAMPLE)
    assert len(ts.cases) >= 60
    ids = [c.id for c in ts.cases]
    assert len(ids) == len(set(ids))
    assert set(ts.tags) <= KNOWN_TAGS and ts.tags
    assert all(c.query.strip() and c.expect for c in ts.cases)
    assert all(1 <= e.grade <= 10 for c in ts.cases for e in c.expect)
    assert ts.path == str(SAMPLE)
    assert ts.sha256 == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()


GOOD_CASE = "  - id: c1\n    query: q one\n    expect:\n      - doc: a.md\n"  # lines 3-6


@pytest.mark.parametrize(
    "body, line, parts",
    [
        pytest.param(
            GOOD_CASE + "  - id: c2\n    query: q two\n    colour: red\n    expect:\n      - doc: a.md\n",
            9, ["case 'c2'", "cases.1.colour", "unknown field"], id="unknown-field",
        ),
        pytest.param(
            GOOD_CASE + "  - id: c2\n    expect:\n      - doc: a.md\n",
            7, ["case 'c2'", "cases.1.query", "Field required"], id="missing-query",
        ),
        pytest.param(
            "  - id: c1\n    query: q one\n    expect: []\n",
            5, ["case 'c1'", "cases.0.expect", "at least 1 item"], id="empty-expect",
        ),
        pytest.param(
            GOOD_CASE + "  - id: c1\n    query: q two\n    expect:\n      - doc: b.md\n",
            7, ["duplicate case id 'c1'", "first as case #1"], id="duplicate-id",
        ),
        pytest.param(
            "  - id: c1\n    query: q one\n    expect:\n      - doc: a.md\n        section: Dash\n        grade: 0\n",
            8, ["case 'c1'", "cases.0.expect.0.grade", "greater than or equal to 1"], id="grade-zero",
        ),
        pytest.param(
            GOOD_CASE + "  - id: c2\n    query: q two\n    expect:\n      - doc: a.md\n        grade: high\n",
            11, ["case 'c2'", "cases.1.expect.0.grade", "valid integer"], id="grade-not-a-number",
        ),
        pytest.param(
            GOOD_CASE + "  - query: no id\n    expect:\n      - doc: a.md\n",
            7, ["case #2", "cases.1.id", "Field required"], id="missing-id",
        ),
        pytest.param(
            "  - id: 'has space'\n    query: q\n    expect:\n      - doc: a.md\n",
            3, ["case 'has space'", "cases.0.id", "pattern"], id="bad-id",
        ),
        pytest.param(
            GOOD_CASE + "  - id: c2\n    query: q: two\n    expect:\n      - doc: a.md\n",
            8, ["malformed YAML", "mapping values are not allowed"], id="malformed-yaml",
        ),
    ],
)
def test_invalid_testsets_name_file_line_case_and_field(tmp_path, body, line, parts):
    p = tmp_path / "bad.yaml"
    p.write_text("name: t\ncases:\n" + body, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_testset(p)
    msg = str(exc.value)
    assert f"{p}:{line}:" in msg, msg
    for part in parts:
        assert part in msg, msg


def test_testset_top_level_problems(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(InputError, match="must be a mapping"):
        load_testset(p)
    p.write_text("name: t\ncases: []\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t.yaml:2: cases: List should have at least 1 item"):
        load_testset(p)
    with pytest.raises(InputError, match="file not found"):
        load_testset(tmp_path / "missing.yaml")


def write_beir(root: Path, qrels_rows: list[str], queries: list[dict]) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "qrels" / "test.tsv").write_bytes(("\r\n".join(qrels_rows) + "\r\n").encode())
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries) + "\n", encoding="utf-8")
    return root


QUERIES = [
    {"_id": "q1", "text": "first query"},
    {"_id": "2", "text": "second query"},
    {"_id": "-3", "text": "third query"},
    {"_id": "10", "text": "tenth query"},
    {"_id": "4", "text": "only a zero row"},
    {"_id": "99", "text": "no qrels at all"},
]
QRELS = [
    "query-id\tcorpus-id\tscore",
    "q1\tdocB\t1",
    "q1\tdocA\t2",
    "2\tdocC\t1",
    "2\tdocD\t0",
    "-3\tdocA\t1",
    "",
    "10\tdocE\t1",
    "4\tdocA\t0",
]


def test_import_beir(tmp_path):
    root = write_beir(tmp_path / "tiny", QRELS, QUERIES)
    ts = import_beir(root)
    assert (ts.name, ts.corpus) == ("tiny-test", str(root))
    # ordered by (id length, id); a leading non-alphanumeric gets a "q" prefix; score-0 rows dropped,
    # so query 4 (only a zero row) and 99 (no rows) are not cases
    assert [c.id for c in ts.cases] == ["2", "q-3", "10", "q1"]
    by_id = {c.id: c for c in ts.cases}
    assert [(e.doc, e.grade, e.section) for e in by_id["q1"].expect] == [("docA", 2, None), ("docB", 1, None)]
    assert [e.doc for e in by_id["2"].expect] == ["docC"]
    assert by_id["q-3"].query == "third query" and by_id["10"].tags == ["test"]


@pytest.mark.parametrize(
    "rows, what",
    [
        (["q1\tdocA"], "test.tsv:1: expected query-id, corpus-id, score"),
        (["query-id\tcorpus-id\tscore", "q1\tdocA\tlots"], "test.tsv:2: score 'lots' is not a number"),
        (["q1\tdocA\t1", "q7\tdocA\t1"], "1 query ids have no text"),
    ],
)
def test_import_beir_errors(tmp_path, rows, what):
    root = write_beir(tmp_path / "bad", rows, QUERIES)
    with pytest.raises(InputError) as exc:
        import_beir(root)
    assert what in str(exc.value)


def test_import_beir_missing_files(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not found"):
        import_beir(tmp_path / "empty")
    root = write_beir(tmp_path / "q", QRELS, [])
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "ok"}\n{"_id": "2"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"queries.jsonl:2: bad query record"):
        import_beir(root)


def test_dump_testset_round_trip(tmp_path):
    ts = import_beir(write_beir(tmp_path / "tiny", QRELS, QUERIES))
    text = dump_testset(ts)
    assert "grade: 2" in text and "grade: 1" not in text  # the default grade is left out
    p = tmp_path / "dumped.yaml"
    p.write_text(text, encoding="utf-8")
    back = load_testset(p)
    assert back.model_dump() == ts.model_dump()
    # the sample set survives a round trip too (sections, grades, tags)
    sample = load_testset(SAMPLE)
    p.write_text(dump_testset(sample), encoding="utf-8")
    assert load_testset(p).model_dump() == sample.model_dump()
