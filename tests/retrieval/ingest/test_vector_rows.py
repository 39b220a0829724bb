"""The driver never holds an ingest's vectors: the embed stage only makes sure every row is in the embedding cache
(``embed.ensure_cached``), and the build reads them back a block at a time (``vector_rows.CachedRows``) into
``vectors.npy`` (``index.vectors.write_vector_blocks``: the bytes ``np.save`` wrote for the whole matrix) and
into a Chroma collection."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.errors import RagrigError
from ragrig.retrieval.cache.embeddings import EmbeddingCache
from ragrig.retrieval.index.layout import Layout
from ragrig.retrieval.index.vectors import unit_rows, write_vector_blocks
from ragrig.retrieval.index.version import IndexVersion
from ragrig.retrieval.ingest import vector_rows
from ragrig.retrieval.ingest.embed import embed_with_cache, ensure_cached
from ragrig.retrieval.ingest.pipeline import IngestPipeline
from ragrig.retrieval.ingest.vector_rows import ArrayRows, CachedRows, take
from ragrig.retrieval.vector_check import check_vector, verdicts
from test_embed import RecordingEmbedder

DOCS = {f"d{i}.md": f"# Doc {i}\n\n## Part {i}a\n\nThe {i} moves {i * 2} inches.\n\n## Part {i}b\n\n"
        f"Shooting at range {i} needs a roll of {i % 6 + 1}.\n" for i in range(9)}


@pytest.mark.parametrize("shape,block", [((1000, 384), 777), ((0, 384), 5), ((3, 16), 1), ((20_000, 24), 8192)])
def test_written_a_block_at_a_time_the_file_is_what_np_save_wrote(tmp_path, shape, block):
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    if len(x) > 1:
        x[1] = 0  # a zero row stays zero
    np.save(tmp_path / "whole.npy", np.ascontiguousarray(unit_rows(x), dtype=np.float32))
    write_vector_blocks(tmp_path, ArrayRows(x, shape[1]).blocks(block), len(x), shape[1])
    assert (tmp_path / "vectors.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()


def test_a_source_with_other_rows_than_announced_leaves_no_file(tmp_path):
    x = np.ones((5, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="4 rows written, 5 expected"):
        write_vector_blocks(tmp_path, [x[:4]], 5, 4)
    with pytest.raises(ValueError, match="the rows are 4 wide"):
        write_vector_blocks(tmp_path, [np.ones((2, 3), dtype=np.float32)], 2, 4)
    assert not (tmp_path / "vectors.npy").exists()


def test_cached_rows_read_in_order_a_block_at_a_time_and_take_picks_rows(tmp_path):
    emb, cache = RecordingEmbedder(batch_size=4), EmbeddingCache(tmp_path / "e.sqlite")
    texts = [" ".join(["w"] * (i % 7 + 1)) + f" {i}" for i in range(23)]
    shas = [f"s{i % 20}" for i in range(23)]  # three repeated texts
    texts[20:] = texts[:3]
    assert ensure_cached(emb, cache, texts, shas) == 20
    assert ensure_cached(emb, cache, texts, shas) == 0 and len(emb.calls) == 5  # nothing embedded twice
    rows = CachedRows(cache, emb.id, shas, 3, False)
    want = np.array([[len(t.split()), len(t), 1.0] for t in texts], dtype=np.float32)
    blocks = list(rows.blocks(5))
    assert [len(b) for b in blocks] == [5, 5, 5, 5, 3] and np.array_equal(np.vstack(blocks), want)
    assert np.array_equal(embed_with_cache(emb, cache, texts, shas)[0], want)
    picked = list(take(rows, [0, 4, 5, 6, 22], 5))
    assert [p for p, _ in picked] == [[0, 4], [5, 6], [22]]
    assert np.array_equal(np.vstack([v for _, v in picked]), want[[0, 4, 5, 6, 22]])


def test_a_row_lost_or_damaged_after_the_embed_stage_fails_the_read_in_one_line(tmp_path):
    emb, cache = RecordingEmbedder(), EmbeddingCache(tmp_path / "e.sqlite")
    ensure_cached(emb, cache, ["a", "b b"], ["sa", "sb"])
    cache.put_many(emb.id, [("sb", np.array([np.nan, 1, 1], dtype=np.float32))])
    with pytest.raises(RagrigError, match=r"embedding cache .*e\.sqlite: 1 vector\(s\) of .* are unusable now "
                                          r"\(the first: NaN or infinite values\).*nothing was published"):
        list(CachedRows(cache, emb.id, ["sa", "sb"], 3, False).blocks())
    with pytest.raises(RagrigError, match=r"\(the first: not there\)"):
        list(CachedRows(cache, emb.id, ["sa", "sz"], 3, False).blocks())


def test_rows_checked_together_get_the_verdicts_of_one_at_a_time():
    rows = [np.array(v, dtype=np.float32) for v in (
        [0.6, 0.8, 0.0], [0.0, 0.0, 0.0], [np.nan, 1, 0], [np.inf, 0, 0], [1.0, 1.0, 0.0], [1.0, 0.0],
        [0.6, 0.8, 0.0005], [0.6, 0.8, 0.1], [1e-30, 0.0, 0.0], [3.0, 4.0, 0.0])]
    for dim in (3, 2, None):
        for normalized in (True, False):
            assert verdicts(rows, dim, normalized) == [check_vector(r, dim, normalized) for r in rows]


def test_an_ingest_reads_the_cache_a_block_at_a_time_and_writes_the_same_bytes(make_config, write_files, tmp_path,
                                                                              monkeypatch):
    """With blocks of 7 rows no call asks the cache for more than 7 vectors (the second encoder's view too), the
    embed stage hands the build rows to read (no matrix), and the version's ``vectors.npy``, its Chroma
    collection and the view's matrix beside the cache hold what a one-block ingest wrote."""
    corpus = write_files(tmp_path / "corpus", DOCS)
    whole = make_config(corpus, f"home={tmp_path / 'one'}", "index.vector_search.mode=chroma",
                        "retrieval.fusion.weights.vector2=1")
    IngestPipeline(whole, progress=False).run()

    asked: list[int] = []
    real = EmbeddingCache.get_checked

    def counting(self, model, shas, *args, **kwargs):
        asked.append(len(shas))
        return real(self, model, shas, *args, **kwargs)

    monkeypatch.setattr(EmbeddingCache, "get_checked", counting)
    monkeypatch.setattr(vector_rows, "BLOCK", 7)
    small = make_config(corpus, f"home={tmp_path / 'small'}", "index.vector_search.mode=chroma",
                        "retrieval.fusion.weights.vector2=1")
    pipe = IngestPipeline(small, progress=False)
    handed = []
    real_embed = pipe.embed
    monkeypatch.setattr(pipe, "embed", lambda chunks: handed.append(real_embed(chunks)) or handed[-1])
    pipe.run()
    assert isinstance(handed[0], CachedRows) and len(handed[0]) > 7
    assert asked and max(asked) <= 7
    a, b = IndexVersion.current(whole), IndexVersion.current(small)
    assert (a.dir / "vectors.npy").read_bytes() == (b.dir / "vectors.npy").read_bytes()
    ids = [c.chunk_id for c in a.chunks]
    got = [col.get(ids=ids, include=["embeddings"]) for col in (a.collection(), b.collection())]
    assert got[0]["ids"] == got[1]["ids"] == ids
    assert np.array_equal(np.asarray(got[0]["embeddings"]), np.asarray(got[1]["embeddings"]))
    assert Layout(small).leftovers() == []
    views = [sorted((p.name, p.read_bytes()) for p in (Layout(c).embedding_cache.parent / "matrices").iterdir())
             for c in (whole, small)]
    assert views[0] == views[1] and len(views[0]) == 2  # the view's matrix and its record


class Watched(list):
    """Texts that record which rows were read (an ingest's are rows read from disk, ``tables.Column``)."""

    def __init__(self, items: list[str]) -> None:
        super().__init__(items)
        self.read: list[int] = []

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        self.read.append(i)
        return super().__getitem__(i)

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("ensure_cached read every text")


@pytest.mark.parametrize("with_tokens", [True, False])
def test_only_the_texts_to_embed_are_read_and_counted_a_block_at_a_time(tmp_path, monkeypatch, with_tokens):
    monkeypatch.setattr(vector_rows, "BLOCK", 2)
    emb, cache = RecordingEmbedder(), EmbeddingCache(tmp_path / "e.sqlite")
    texts = ["a", "b b b", "c c", "b b b", "d d d d", "e"]
    shas = ["sa", "sb", "sc", "sb", "sd", "se"]
    ensure_cached(emb, cache, ["a", "e"], ["sa", "se"])  # two of them cached already
    watched = Watched(texts)
    tokens = [len(t.split()) for t in texts] if with_tokens else None
    assert ensure_cached(emb, cache, watched, shas, tokens=tokens, chunk_size=2) == 3
    counted = [] if with_tokens else [1, 2, 3, 4]  # the missing rows, for their token counts
    assert watched.read == [*counted, 4, 1, 2]  # then only the texts embedded, as their batches come
    assert emb.calls[-2:] == [["d d d d", "b b b"], ["c c"]]  # longest first, the first of a repeated text
    if not with_tokens:
        assert emb.counted[-2:] == [["b b b", "c c"], ["b b b", "d d d d"]]  # the missing rows, two at a time
