"""Hops as batches (issue 37): the queries of a batch take each hop together, every hybrid retrieval a hop needs
being one ``search_many``, with the same results as each query hopping alone. A fake index counts the calls; its
search ranks the chunks by how many words of the item they share (ties by row), so depth matters."""

from __future__ import annotations

from types import SimpleNamespace

from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.multihop.hops import hop_scores, multi_hop
from ragrig.retrieval.multihop.judges import Judgement, Missing
from ragrig.retrieval.results import Hit, RetrievalResult

WORDS = ["fire", "ice", "storm", "stone", "shadow", "light", "blade", "shield", "arrow", "poison", "cure", "haste"]


def chunk(i: int) -> Chunk:
    text = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 5 + 1) % len(WORDS)]} rule {i}"
    return Chunk(chunk_id=f"r.md#{i}", doc_id="r.md", header_path=[f"Rule {i}"], level=2, start=0, end=len(text),
                 text=text, search_text=text, sha256=str(i), tokens=4)


class FakeIndex:
    def __init__(self, n: int = 40, headers: dict[str, list[int]] | None = None) -> None:
        self.chunks = [chunk(i) for i in range(n)]
        self.rows = {c.chunk_id: i for i, c in enumerate(self.chunks)}
        named = headers or {}
        self.terms = SimpleNamespace(sections_of=lambda item: set(), terms_in=lambda text: [])
        self.headers = SimpleNamespace(lookup=lambda name, threshold: [SimpleNamespace(rows=named.get(name, []))],
                                       mentions=lambda q, threshold, limit=10: [])
        self.calls: list[list[tuple[str, int]]] = []

    def row_of(self, chunk_id: str) -> int:
        return self.rows[chunk_id]

    def mask(self, filters):
        return None

    def search_many(self, queries, *, top_k, retrieval, filters=None, max_hops=None):
        ks = [top_k] * len(queries) if isinstance(top_k, int) else list(top_k)
        assert max_hops == [0] * len(queries) and retrieval.max_hops == 0
        self.calls.append(list(zip(queries, ks)))
        out = []
        for q, k in zip(queries, ks):
            words = set(q.split())
            ranked = sorted(range(len(self.chunks)), key=lambda r: (-len(words & set(self.chunks[r].text.split())), r))
            hits = [Hit.from_chunk(self.chunks[r], 1.0 / (1 + i)) for i, r in enumerate(ranked[:k])]
            out.append(RetrievalResult(query=q, normalized=q, bm25_query=q, expansions=[], comparison=None, hits=hits,
                                       version="v1"))
        return out


class FakeJudge:
    """Asks, at each hop, for two items named after the query and the hop (never satisfied)."""

    def judge(self, query: str, hits):
        hop = sum(1 for h in hits if h.hop) // 2 + 1
        items = [f"{query} {WORDS[(hop * 3) % len(WORDS)]}", f"{WORDS[(hop + len(query)) % len(WORDS)]} {query}"]
        return Judgement(can_answer=False, reasoning="more", missing=[Missing(x) for x in items])


def firsts(index: FakeIndex, queries: list[str], k: int) -> list[RetrievalResult]:
    out = []
    for j, q in enumerate(queries):
        hits = [Hit.from_chunk(index.chunks[(j * 7 + i) % len(index.chunks)], 1.0 - i / 10) for i in range(k)]
        out.append(RetrievalResult(query=q, normalized=q, bm25_query=q, expansions=[], comparison=None, hits=hits,
                                   version="v1", timings_ms={"total": 1.0}))
    return out


QUERIES = ["fire storm", "ice blade", "shadow cure", "light arrow", "stone poison", "haste shield"]


def view(results: list[RetrievalResult]) -> list[tuple]:
    return [([(h.chunk_id, h.hop, h.score, h.reason) for h in r.hits],
             [{k: v for k, v in hop.items() if k != "ms"} for hop in r.hops]) for r in results]


def test_each_hop_of_a_batch_is_one_search_many_with_the_results_of_each_query_alone():
    r = RetrievalConfig(top_k=5, hop_chunks=3)
    index = FakeIndex(headers={"fire storm stone": [30]})  # one item answered by its header: no search for it
    batch = multi_hop(index, firsts(index, QUERIES, 5), r, [5] * 6, [2] * 6, judge=FakeJudge())
    assert len(index.calls) == 2  # once per hop, for every query of the batch
    assert sum(len(c) for c in index.calls) < 2 * 2 * len(QUERIES)  # the header match was not searched
    alone = []
    for q in QUERIES:
        one = FakeIndex(headers={"fire storm stone": [30]})
        alone += multi_hop(one, firsts(one, [q], 5)[:1] if q == QUERIES[0] else
                           [firsts(one, QUERIES, 5)[QUERIES.index(q)]], r, [5], [2], judge=FakeJudge())
    assert view(batch) == view(alone)
    assert all(len([h for h in res.hits if h.hop]) > 0 for res in batch)


def test_queries_that_stop_early_leave_the_batch_and_max_hops_is_per_query():
    r = RetrievalConfig(top_k=4)
    index = FakeIndex()
    out = multi_hop(index, firsts(index, QUERIES[:4], 4), r, [4] * 4, [0, 1, 2, 3], judge=FakeJudge())
    assert [len(c) for c in index.calls] == [6, 4, 2]  # two items a query: 3, then 2, then 1 query hopping
    assert [len(res.hops) for res in out] == [0, 1, 2, 3]


def test_hop_hits_take_the_lowest_hop_0_score_of_the_whole_ranking():
    hits = [Hit.from_chunk(chunk(i), s) for i, s in ((0, 0.9), (1, 0.5))] + [Hit.from_chunk(chunk(2), 0.0, hop=1)]
    assert [h.score for h in hop_scores(hits, [("r.md#7", 0.3), ("r.md#2", 0.1)])] == [0.9, 0.5, 0.3]
    assert hop_scores([Hit.from_chunk(chunk(2), 0.0, hop=1)])[0].score == 0.0
