"""The sources registry (issue 37): one name tuple that the registry, the config validator, the candidates, fusion
and every renderer read, so a source added in one place only fails here; one fetch per source per batch; views
searched by the same exact, batch-independent search as the vectors."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.models import FusionConfig
from ragrig.configs.sources import RANK_NAMES, SOURCE_NAMES
from ragrig.retrieval.results import Hit, RetrievalResult, SourceScore
from ragrig.retrieval.search.candidates import CandidateBatch, CandidateSet, ChunkOrder, SourceRun
from ragrig.retrieval.search.fusion import fuse
from ragrig.retrieval.search.memo import CandidateMemo
from ragrig.retrieval.search.query import QueryProcessor
from ragrig.retrieval.search.sources import SOURCES, Sources, active, fetch_candidates
from ragrig.retrieval.search.views import ExactView


def test_the_registry_is_the_names_tuple():
    assert tuple(SOURCES) == SOURCE_NAMES and RANK_NAMES == (*SOURCE_NAMES, "rerank")


def test_the_validator_accepts_every_source_and_names_them_all_when_refusing(make_config):
    for name in SOURCE_NAMES:
        assert FusionConfig(weights={name: 1.0}).weights == {name: 1.0}
    with pytest.raises(InputError) as err:
        make_config(None, "retrieval.fusion.weights.colbert=1")
    supported = str(err.value).split("supported: ", 1)[1]
    assert [s.strip() for s in supported.split(",")][: len(SOURCE_NAMES)] == list(SOURCE_NAMES)


def test_candidates_and_fusion_keep_every_source_in_registry_order():
    order = ChunkOrder.of(["a", "b", "c"])
    runs = {s: SourceRun.of([(i % 2 + 1, 0.5), (0, 2.0)]) for i, s in enumerate(reversed(SOURCE_NAMES))}
    cs = CandidateSet.build(runs, order, None)
    assert tuple(cs.runs) == SOURCE_NAMES
    batch = CandidateBatch.of([cs])
    assert tuple(batch.sources) == SOURCE_NAMES
    fused = fuse(batch, FusionConfig(method="rrf", weights={s: 1.0 for s in SOURCE_NAMES}))
    assert int(batch.rows[fused.order[0]]) == 0  # ranked first by every source: the best possible score
    assert fused.scores[0] == pytest.approx(1.0)
    assert set(cs.sources_of(int(np.flatnonzero(cs.rows == 0)[0]))) == set(SOURCE_NAMES)


def _hit(ranked_by: tuple[str, ...]) -> Hit:
    return Hit(chunk_id="a.md#0", doc_id="a.md", header_path=["A"], text="t", score=1.0,
               sources={s: SourceScore(i + 2, 0.5) for i, s in enumerate(ranked_by)})


def test_query_renderer_shows_every_source_that_ranked_a_hit(monkeypatch):
    from ragrig.flows.render import query
    from rich.console import Console

    buf = io.StringIO()
    monkeypatch.setattr(query, "console", Console(file=buf, width=300, color_system=None))
    hits = [_hit(RANK_NAMES), _hit(("bm25",))]
    res = RetrievalResult(query="q", normalized="q", bm25_query="q", expansions=[], comparison=None, hits=hits,
                          version="v000001")
    query.print_query(res, "idx")
    header = next(line for line in buf.getvalue().splitlines() if "score" in line)
    assert all(name in header.split() for name in RANK_NAMES), header
    row = next(line for line in buf.getvalue().splitlines() if line.strip().startswith("│ 1"))
    assert [c.strip() for c in row.split("│")][-len(RANK_NAMES) - 1:-1] == [str(i + 2) for i in range(len(RANK_NAMES))]
    # a source that ranked no hit has no column
    buf.truncate(0)
    query.print_query(RetrievalResult(**{**res.__dict__, "hits": [_hit(("vector",))]}), "idx")
    header = next(line for line in buf.getvalue().splitlines() if "score" in line)
    assert "vector" in header.split() and "bm25" not in header.split()


def test_case_renderer_shows_every_source_that_ranked_a_hit(monkeypatch):
    from ragrig.flows.render import cases
    from rich.console import Console

    buf = io.StringIO()
    monkeypatch.setattr(cases, "console", Console(file=buf, width=300, color_system=None))
    top = [{"rank": 1, "relevant": True, "hop": 0, "score": 1.0, "chunk_id": "a.md#0", "header": "A",
            "sources": {s: i + 2 for i, s in enumerate(RANK_NAMES)}}]
    cases.print_cases({"index": {"key": "k", "version": "v1"}, "testset": "t", "per_query": [
        {"id": "q1", "query": "q", "metrics": {}, "expected": [], "top": top}]})
    header = next(line for line in buf.getvalue().splitlines() if "score" in line)
    assert all(name in header.split() for name in RANK_NAMES), header


class FakeView:
    def __init__(self, embedder):
        self.embedder, self.searched = embedder, []

    def search(self, qvecs, depth, mask):
        self.searched.append(len(qvecs))
        return [SourceRun.of([(0, float(v[0]))]) for v in qvecs]


class FakeEmbedder:
    def __init__(self):
        self.calls = []

    def encode_queries(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


class FakeSources(Sources):
    def __init__(self):
        own, second = FakeEmbedder(), FakeEmbedder()
        section, chunks2 = FakeView(own), FakeView(second)
        self.views = SimpleNamespace(embedder=own, section=section, second=lambda model, backend: chunks2)
        self.encode = own.encode_queries
        self.calls: dict[str, int] = {}

    def bm25(self, text, depth, mask):
        self.calls["bm25"] = self.calls.get("bm25", 0) + 1
        return SourceRun.of([(0, 1.0)])

    def vectors(self, vecs, depth, mask):
        self.calls["vector"] = self.calls.get("vector", 0) + 1
        return [SourceRun.of([(1, 0.5)]) for _ in vecs]

    def header(self, text, depth, mask, threshold):
        return SourceRun.of([])


def test_every_source_fetches_a_batch_once_and_queries_are_encoded_once_per_model():
    from ragrig.configs.models import RetrievalConfig, ViewsConfig

    r = RetrievalConfig(fusion=FusionConfig(weights={s: 1.0 for s in SOURCE_NAMES}),
                        views=ViewsConfig(second_model="m2"))
    assert active(r) == list(SOURCE_NAMES)
    src, memo, proc = FakeSources(), CandidateMemo(), QueryProcessor()
    processed = [proc.process(q) for q in ("alpha one", "beta two", "alpha one")]
    t = [dict[str, float]() for _ in processed]
    keys = fetch_candidates(src, processed, r, None, None, memo, t)
    assert [tuple(k) for k in keys] == [SOURCE_NAMES] * 3 and keys[0] == keys[2]
    assert all(k[s][0] == s for k in keys for s in k)  # each run key starts with its source's name
    assert src.calls == {"bm25": 2, "vector": 1}  # bm25 per unique text; the vector search once for the batch
    assert src.views.embedder.calls == [["alpha one", "beta two"]]  # vector and section share one encoding
    assert src.views.second("m2", "auto").embedder.calls == [["alpha one", "beta two"]]
    assert src.views.section.searched == [2] and src.views.second("m2", "auto").searched == [2]
    assert all(set(SOURCE_NAMES) <= set(tq) for tq in t)
    again = fetch_candidates(src, processed, r, None, None, memo, t)  # memoised: nothing fetched twice
    assert again == keys and src.calls == {"bm25": 2, "vector": 1} and len(src.views.embedder.calls) == 1


def test_a_view_scores_a_query_the_same_alone_as_in_a_batch():
    """The views' exact search is vector_search's (one dot product per row, fixed order): a query's scores do
    not depend on the batch around it (a BLAS matrix product over the batch changed them in the last bits)."""
    rng = np.random.default_rng(7)
    n, dim = 3000, 384
    view = ExactView([str(i) for i in range(n)], [[i] for i in range(n)], None, None)
    view.__dict__["matrix"] = rng.standard_normal((n, dim))  # the cached matrix, as if embedded
    view.matrix /= np.linalg.norm(view.matrix, axis=1, keepdims=True)
    qvecs = rng.standard_normal((64, dim)).astype(np.float32)
    batch = view.search(qvecs, 50, None)
    for i in range(len(qvecs)):
        [alone] = view.search(qvecs[i : i + 1], 50, None)
        assert alone.rows.tolist() == batch[i].rows.tolist()
        assert alone.scores.tobytes() == batch[i].scores.tobytes()
