"""A version's chunk table (issue 38): rows parsed from chunks.jsonl as they are read, beside ``reader/``, the
structures ingest derived once. The lazy table reads as every row parsed does, the stored structures are the ones
``derive`` makes, a version without ``reader/`` opens as before, the retriever answers the same on either, and a
``reader/`` file that does not fit the table is refused naming it."""

from __future__ import annotations


import numpy as np
import pytest
from ragrig.configs.errors import IndexDamagedError
from ragrig.configs.load import load_config
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.index import reader_files
from ragrig.retrieval.index.chunk_table import ChunkTable, derive
from ragrig.retrieval.index.format import read_chunks
from ragrig.retrieval.index.reader_files import load_table
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.search.candidates import DedupKeys
from ragrig.retrieval.search.retriever import Retriever
from ragrig.retrieval.search.select import dedup_walk

pytestmark = pytest.mark.slow
DOCS = {
    "b.md": ("# Beta\n\n## Cover\n\nCover gives a save.\n\n## Smoke\n\nSmoke blocks sight.\n\n"
             "## Copy\n\nRoll dice to shoot.\n"),
    "a.md": ("# Alpha – ünïcode\n\n## Move\n\nMove six inches.\n\n## Shoot\n\nRoll dice to shoot.\n\n"
             "## Long\n\n" + "A long section about charging and fighting in melee. " * 60 + "\n"),
    "c.md": ("# Gamma\n\n## Lethal 5+\n\nLethal hits crit on a 5+.\n\n"
             "## Rending\n\nRending upgrades a hit; see Lethal 5+.\n"),
}
SETS = ("chunking.max_tokens=64",)  # the long section in pieces (parts 1, 2, ...)
QUERIES = ["how far can I move", "what does cover do", "Lethal 5+", "roll dice to shoot", "charging in melee",
           "Cover vs Smoke"]


@pytest.fixture
def version(published):
    corpus = published(DOCS, *SETS)
    cfg = load_config(None, [f"corpus.path={corpus}", "retrieval.synonyms=null", "eval.testsets=[]", *SETS])
    v = IndexVersion.current(cfg)
    yield cfg, v
    v.release()


def test_the_lazy_table_reads_as_every_row_parsed(version):
    _, v = version
    table, parsed = v.chunks, read_chunks(v.dir)
    assert table.lazy_rows and len(table) == len(parsed) > 8
    assert any(c.part > 1 for c in parsed)  # the long section is in pieces
    assert list(table) == parsed and [table[i] for i in range(len(parsed))] == parsed
    assert table[-1] == parsed[-1] and table[2:5] == parsed[2:5] and table[::3] == parsed[::3]
    with pytest.raises(IndexError):
        table[len(parsed)]
    rows = v.chunk_index
    assert {cid: rows[cid] for cid in rows} == {c.chunk_id: i for i, c in enumerate(parsed)}
    assert "a.md#nope" not in rows and rows.get("a.md#nope") is None and len(rows) == len(parsed)
    with pytest.raises(KeyError):
        rows["a.md#nope"]
    for doc in ("a.md", "b.md", "c.md"):
        assert table.doc_rows(doc) == [i for i, c in enumerate(parsed) if c.doc_id == doc]
    assert table.doc_rows("z.md") == []


def test_the_stored_structures_are_the_ones_derive_makes(version):
    _, v = version
    stored, made = v.chunks.derived, derive(read_chunks(v.dir), v.keywords)
    assert stored.order.tolist() == made.order.tolist()
    assert stored.codes.tolist() == made.codes.tolist() and stored.docs == made.docs == ["a.md", "b.md", "c.md"]
    (keys, shown, flat, ptr), made_state = stored.headers.state(), made.headers.state()
    assert keys and (keys, list(shown)) == (made_state[0], list(made_state[1]))
    assert flat.tolist() == made_state[2].tolist() and ptr.tolist() == made_state[3].tolist()
    assert stored.terms == made.terms


def test_a_version_without_reader_opens_as_before_and_answers_the_same(version, monkeypatch):
    cfg, v = version
    lazy = Retriever(cfg, v)
    assert lazy.chunks.lazy_rows
    expected = [[(h.chunk_id, h.score, h.text) for h in res.hits] for res in lazy.search_many(QUERIES)]
    ranked = [[c.chunk_id for c in res.ranked] for res in lazy.search_many(QUERIES)]
    monkeypatch.setattr("ragrig.retrieval.index.version.has_reader", lambda _: False)
    old = IndexVersion.current(cfg)
    try:
        eager = Retriever(cfg, old)
        assert not eager.chunks.lazy_rows
        assert [[(h.chunk_id, h.score, h.text) for h in res.hits] for res in eager.search_many(QUERIES)] == expected
        assert [[c.chunk_id for c in res.ranked] for res in eager.search_many(QUERIES)] == ranked
        expanded = cfg.retrieval.model_copy(update={"section_expansion_tokens": 400})
        assert ([[h.chunk_id for h in res.hits] for res in eager.search_many(QUERIES, retrieval=expanded)]
                == [[h.chunk_id for h in res.hits] for res in lazy.search_many(QUERIES, retrieval=expanded)])
    finally:
        old.release()


def test_numbered_dedup_keys_find_the_duplicates_the_keys_do(version):
    _, v = version
    parsed = read_chunks(v.dir)
    from ragrig.retrieval.index.chunk_table import dedup_key

    by_key, by_code = DedupKeys.build([dedup_key(c) for c in parsed]), DedupKeys.of_codes(v.chunks.derived.codes[:, :2])
    assert by_key.prone.tolist() == by_code.prone.tolist() and by_key.prone.any()  # "Roll dice to shoot." twice
    for limit in (None, 1, 3):
        rows = list(range(len(parsed)))[::-1]
        assert (dedup_walk([by_key.keys[r] for r in rows], by_key.prone[rows], limit).tolist()
                == dedup_walk([by_code.keys[r] for r in rows], by_code.prone[rows], limit).tolist())


def _damage(v, name: str, change) -> None:
    path = v.dir / reader_files.READER_DIR / name
    path.chmod(0o644)
    change(path)


@pytest.mark.parametrize("name, change, says", [
    ("rows.npy", lambda p: np.save(p, np.load(p)[:-1]), "rows.npy is int64"),
    ("rows.npy", lambda p: np.save(p, np.load(p) + 1), "rows.npy does not fit chunks.jsonl"),
    ("order.npy", lambda p: np.save(p, np.zeros_like(np.load(p))), "order.npy is not an order"),
    ("codes.npy", lambda p: np.save(p, np.load(p).astype(np.float64)), "codes.npy is float64"),
    ("codes.npy", lambda p: np.save(p, np.load(p) * 0 + 99), "codes.npy does not fit docs.json"),
    ("ids.bin", lambda p: p.write_bytes(p.read_bytes()[:-1]), "ids.npy does not fit ids.bin"),
    ("headers.txt", lambda p: p.write_text(p.read_text() + "\nnew key"), "header_titles.npy holds"),
    ("header_titles.npy", lambda p: np.save(p, np.load(p)[:-1]), "header_titles.npy does not fit"),
    ("header_titles.bin", lambda p: p.write_bytes(p.read_bytes() + b"x"), "header_titles.npy does not fit"),
    ("header_rows.npy", lambda p: np.save(p, np.load(p) + 10**6), "header_rows.npy does not fit"),
    ("header_ptr.npy", lambda p: np.save(p, np.load(p)[::-1].copy()), "header_rows.npy does not fit"),
    ("header_rows.npy", lambda p: np.save(p, np.load(p).astype(np.int32)), "header_rows.npy is int32"),
    ("terms.json", lambda p: p.write_text('{"t": [1]}'), "terms.json is not term -> chunk ids"),
    ("docs.json", lambda p: p.write_text("{}"), "docs.json is not a JSON list"),
    ("order.npy", lambda p: p.write_bytes(b"\x93NUMPY junk"), "order.npy is not a numpy array"),
])
def test_a_reader_file_that_does_not_fit_is_refused_naming_it(version, name, change, says):
    _, v = version
    _damage(v, name, change)
    with pytest.raises((ValueError, OSError), match=says.replace("+", r"\+")):
        load_table(v.dir, v.manifest["counts"]["chunks"], v.dir / "chunks.jsonl", v.keywords, v.damaged)
    fresh = IndexVersion(v.cfg, v.layout, v.version)
    with pytest.raises(IndexDamagedError, match="reader/ is unreadable|does not match the manifest"):
        fresh.check()
        fresh.chunks


def test_a_row_that_does_not_parse_is_the_index_damaged_not_a_raw_error(version):
    _, v = version
    table = v.chunks
    path = v.dir / "chunks.jsonl"
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    start = int(np.load(v.dir / "reader" / "rows.npy")[3])
    data[start] = ord("#")
    path.write_bytes(bytes(data))
    fresh = load_table(v.dir, len(table), path, v.keywords, v.damaged)
    with pytest.raises(IndexDamagedError, match="chunks.jsonl row 3 is unreadable"):
        fresh[3]
    with pytest.raises(IndexDamagedError, match="chunks.jsonl row 3 is unreadable"):
        list(fresh)
    path.write_bytes(bytes(data[:start]))  # cut after row 2 (after the table was opened): reading every row says so
    with pytest.raises(IndexDamagedError, match=f"chunks.jsonl ends after 3 of its {len(table)} rows"):
        list(fresh)


def test_a_table_of_rows_in_memory_has_the_same_reads():
    rows = [Chunk(chunk_id=f"d.md#{i}", doc_id="d.md", header_path=["D", f"S{i % 3}"], level=2, start=0, end=1,
                  text="same" if i % 2 else f"t{i}", search_text=f"s{i}", sha256=str(i), tokens=1) for i in (3, 1, 2)]
    t = ChunkTable.of(rows, {"terms": []})
    assert list(t) == rows and t[1] == rows[1] and t.rows_by_id["d.md#2"] == 2 and t.doc_rows("d.md") == [0, 1, 2]
    assert t.derived.order.tolist() == [1, 2, 0]  # d.md#1, d.md#2, d.md#3
    assert t.derived.codes[:, 0].tolist() == [0, 0, 1]  # rows 0 and 1 share their text
