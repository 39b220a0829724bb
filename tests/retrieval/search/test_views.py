"""More views as fused sources: section grouping and section-view scores worked out by hand (a fake embedder
with fixed vectors), the embedding cache doing the embedding once, and the config rule for vector2."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.search.views import ExactView, section_groups


def chunk(i: int, doc: str, path: list[str], part: int = 0, level: int = 2) -> Chunk:
    text = f"body {i}"
    return Chunk(chunk_id=f"c{i}", doc_id=doc, header_path=path, level=level, start=0, end=len(text), text=text,
                 search_text=f"{' > '.join(path)}\n{text}", sha256=str(i), tokens=2, part=part)


CHUNKS = [
    chunk(0, "a.md", ["A", "Intro"]),  # a whole section
    chunk(1, "a.md", ["A", "Long"], part=1),  # a section split in three
    chunk(2, "a.md", ["A", "Long"], part=2),
    chunk(3, "a.md", ["A", "Long"], part=3),
    chunk(4, "a.md", ["A", "Long"], part=1),  # a second section with the same path: a new group at part 1
    chunk(5, "b.md", ["B", "Other"]),
]


def test_sections_group_consecutive_pieces_only():
    texts, groups = section_groups(CHUNKS)
    assert groups == [[0], [1, 2, 3], [4], [5]]
    assert texts[0] == "A > Intro\nbody 0"  # an unsplit section's text is its chunk's (an embedding cache hit)
    assert texts[1] == "A > Long\nbody 1\n\nbody 2\n\nbody 3"


class FakeEmbedder:
    """Fixed vectors per text; counts what it embeds."""

    id = "fake-model"

    class cfg:  # noqa: N801 - what embed_with_cache reads
        document_prefix = ""
        normalize = False  # the table's vectors are not unit: the cache checks norms only of normalising models

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table, self.encoded = table, []
        self.dim = len(next(iter(table.values())))

    def count_tokens(self, texts):
        return [len(t) for t in texts]

    def encode_sorted(self, texts, prefix="", on_batch=None):
        self.encoded += list(texts)
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    def encode_queries(self, texts):
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_each_chunk_takes_its_sections_score_by_hand(tmp_path):
    texts, groups = section_groups(CHUNKS)
    # section vectors (unit after normalising): s0 = [1, 0], s1 = [3, 4]/5, s2 = [0, 1], s3 = [-1, 0]
    emb = FakeEmbedder({texts[0]: [1, 0], texts[1]: [3, 4], texts[2]: [0, 2], texts[3]: [-1, 0], "q": [0, 1]})
    view = ExactView(texts, groups, emb, tmp_path / "embeddings.sqlite")
    # query [0, 1]: cosines s0 0.0, s1 0.8, s2 1.0, s3 0.0 -> s2 (row 4), s1 (rows 1, 2, 3), s0 (row 0), s3 (row 5)
    [run] = view.search(emb.encode_queries(["q"]), depth=10, mask=None)
    assert run.rows.tolist() == [4, 1, 2, 3, 0, 5]
    assert run.scores == pytest.approx([1.0, 0.8, 0.8, 0.8, 0.0, 0.0])
    # depth 3 stops after three rows (mid-section); a mask drops rows, not the section's score
    [run] = view.search(emb.encode_queries(["q"]), depth=3, mask=None)
    assert run.rows.tolist() == [4, 1, 2]
    mask = np.array([True, False, True, True, False, True])
    [run] = view.search(emb.encode_queries(["q"]), depth=3, mask=mask)
    assert run.rows.tolist() == [2, 3, 0] and run.scores == pytest.approx([0.8, 0.8, 0.0])
    # embedded once, through the embedding cache: a second view over the same texts embeds nothing
    assert len(emb.encoded) == 4
    again = ExactView(texts, groups, emb, tmp_path / "embeddings.sqlite")
    assert again.matrix.shape == (4, 2) and len(emb.encoded) == 4


def test_vector2_needs_a_second_model(make_config):
    cfg = make_config(None)  # the default fuses the packaged bge-small as the second encoder
    assert cfg.retrieval.fusion.weights["vector2"] == 1.0 and cfg.retrieval.views.second_model == "bge-small-en-v1.5"
    with pytest.raises(InputError, match=r"fusion.weights.vector2 > 0 needs retrieval.views.second_model.*"
                                         r"fusion.weights.vector2: 0 turns the second encoder off"):
        make_config(None, "retrieval.views.second_model=null")
    off = make_config(None, "retrieval.views.second_model=null", "retrieval.fusion.weights.vector2=0")
    assert off.retrieval.fusion.weights["vector2"] == 0
    with pytest.raises(InputError, match=r"unknown source\(s\) \['colbert'\]"):
        make_config(None, "retrieval.fusion.weights.colbert=1")


@pytest.mark.slow
def test_views_as_fused_sources_in_the_retriever(tmp_path_factory, embedder):
    """Weighted on, each view is a source of its own: hits carry its rank and score, the result its time; the
    second encoder (the packaged bge-small) embeds every chunk once, through the cache."""
    from test_rerank import tiny

    cfg, r = tiny.__wrapped__(tmp_path_factory, embedder)
    q = "what does a weapon rule do"
    weights = {"bm25": 1.0, "vector": 1.0, "section": 1.0, "vector2": 1.0}
    on = cfg.retrieval.model_copy(update={
        "fusion": cfg.retrieval.fusion.model_copy(update={"weights": weights}),
        "views": cfg.retrieval.views.model_copy(update={"second_model": "bge-small-en-v1.5"})})
    res = r.search(q, retrieval=on, use_cache=False)
    assert {"section", "vector2"} <= set(res.candidates) and {"section", "vector2"} <= set(res.timings_ms)
    top = res.hits[0]
    assert {"section", "vector2"} & set(top.sources)
    # an unsplit section's score is its chunk's vector similarity
    whole = [h for h in res.hits if "section" in h.sources and "vector" in h.sources
             and r.chunks[r.row_of(h.chunk_id)].part == 0]
    assert whole and all(abs(h.sources["section"].score - h.sources["vector"].score) < 1e-4 for h in whole)
    view = r.sources.views.second("bge-small-en-v1.5", "auto")
    assert view.matrix.shape == (len(r.chunks), 384)
