"""The staged tables a driver reads its chunks from instead of holding them (``retrieval/ingest/tables.py``)."""

from __future__ import annotations

import math

import pytest
from ragrig.configs.errors import RagrigError
from ragrig.retrieval.documents import Chunk, Document
from ragrig.retrieval.index import chunk_table
from ragrig.retrieval.index.chunk_table import derive
from ragrig.retrieval.index.format import write_tables as write_in_one_pass
from ragrig.retrieval.ingest import tables
from ragrig.retrieval.ingest.plan import Plan


def chunk(doc_id: str, i: int, text: str) -> Chunk:
    return Chunk(f"{doc_id}#{i}", doc_id, [doc_id, "Sé"], 2, 0, len(text), text, f"{doc_id}\n{text}",
                 f"sha-{doc_id}-{i}", i + 1, metadata={"k": [1, {"x": "ü"}]})


def staged(tmp_path, n: int = 9) -> tables.StagedTables:
    spill = tables.TableSpill(tmp_path)
    for doc_id in ("d3", "d1", "d2"):  # plan order, not doc-id order
        spill.add([Document(doc_id, "h", "md", f"# {doc_id}")],
                  [chunk(doc_id, i, "w" * (i + 1)) for i in range(n // 3)])
    return tables.write_tables(tmp_path, Plan([], [], [], {}, [], None), spill, failed=set())


@pytest.mark.parametrize("block", [1 << 20, 1, 40])
def test_rows_read_in_order_a_block_at_a_time_equal_the_rows_by_number(tmp_path, monkeypatch, block):
    monkeypatch.setattr(chunk_table, "READ_BLOCK", block)
    out = staged(tmp_path)
    rows = out.chunks
    assert len(rows) == 9 and [c.chunk_id for c in rows] == [f"d{d}#{i}" for d in (1, 2, 3) for i in range(3)]
    assert list(rows) == [rows[i] for i in range(9)] == rows[:] and rows[-1] == rows[8] and rows[2:4] == list(rows)[2:4]
    assert rows[4].metadata == {"k": [1, {"x": "ü"}]} and rows[4].header_path == ["d2", "Sé"]
    with pytest.raises(IndexError, match="chunk row 9 out of range"):
        rows[9]
    assert [d.doc_id for d in out.docs] == ["d1", "d2", "d3"] and len(out.docs) == 3


def test_the_rows_stay_readable_after_the_staging_folder_is_renamed(tmp_path):
    (tmp_path / "stage").mkdir()
    rows = staged(tmp_path / "stage").chunks
    first = rows[0]
    (tmp_path / "stage").rename(tmp_path / "v000001")  # publish.complete renames the folder under the build
    assert list(rows)[0] == first and rows[5].chunk_id == "d2#2"


def test_a_column_reads_one_field_through_the_rows(tmp_path):
    rows = staged(tmp_path).chunks
    col = tables.Column(rows, "search_text")
    assert len(col) == 9 and list(col) == [c.search_text for c in rows] and col[3] == "d2\nw"
    assert col[1:3] == ["d1\nww", "d1\nwww"]
    texts, shas = tables.columns(rows, "text", "sha256")
    assert texts == [c.text for c in rows] and shas[-1] == "sha-d3-2"


def test_the_tables_are_the_one_pass_writers_bytes(tmp_path):
    out = staged(tmp_path)
    docs, chunks = list(out.docs), list(out.chunks)
    (tmp_path / "one").mkdir()
    assert write_in_one_pass(tmp_path / "one", docs, chunks).tolist() == out.chunks.offsets.tolist()
    for name in ("documents.jsonl", "chunks.jsonl"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "one" / name).read_bytes()


def test_a_chunk_whose_document_the_partition_did_not_return_is_refused(tmp_path):
    spill = tables.TableSpill(tmp_path)
    with pytest.raises(RagrigError, match="chunk d9#0 of document d9, which it did not extract"):
        spill.add([Document("d1", "h", "md", "# d1")], [chunk("d9", 0, "w")])


def test_a_damaged_row_is_one_line_naming_the_file(tmp_path):
    rows = staged(tmp_path).chunks
    path = tmp_path / "chunks.jsonl"
    data = bytearray(path.read_bytes())
    data[int(rows.offsets[4])] = ord("x")
    path.write_bytes(bytes(data))
    fresh = tables.StagedChunks(path, rows.offsets)
    with pytest.raises(RagrigError, match=r"chunks.jsonl: chunks.jsonl row 4 is unreadable .*nothing was published"):
        list(fresh)


def test_a_row_orjson_refuses_is_read_as_json_reads_it(tmp_path):
    spill = tables.TableSpill(tmp_path)
    odd = Chunk("d1#0", "d1", ["d1"], 1, 0, 1, "t", "t", "s", 1, metadata={"score": float("nan"), "big": 2**70})
    spill.add([Document("d1", "h", "md", "# d1")], [odd])
    rows = tables.write_tables(tmp_path, Plan([], [], [], {}, [], None), spill, failed=set()).chunks
    got = rows[0].metadata
    assert math.isnan(got["score"]) and got["big"] == 2**70 and list(rows)[0].metadata["big"] == 2**70


def test_slim_rows_derive_what_the_full_rows_derive(tmp_path):
    full = [chunk("d1", 0, "Same  words"), chunk("d1", 1, "same words"), chunk("d2", 0, "other")]
    full[1].part = 2
    rows, digests = tables.slim(full)
    assert all(r.text == r.search_text == "" and r.metadata == {} for r in rows)
    assert [r.chunk_id for r in rows] == [c.chunk_id for c in full] and rows[1].header_path == ["d1", "Sé"]
    library = {"terms": [{"term": "sé", "kind": "name", "text_count": 1}]}
    want, got = derive(full, library), derive(rows, library, digests)
    assert got.codes.tolist() == want.codes.tolist() == [[0, -1, 0], [0, 0, 0], [1, -1, 1]]
    assert (got.order.tolist(), got.docs, got.terms, got.headers.state()[0]) == (
        want.order.tolist(), want.docs, want.terms, want.headers.state()[0])
