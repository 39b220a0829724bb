"""The query cache (LRU + TTL), context assembly and metadata filters."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.cache.queries import QueryCache
from ragrig.retrieval.context import build_context
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.filters import Filters
from ragrig.retrieval.results import Hit


def chunk(cid: str, text: str, doc: str = "d.md", path: list[str] | None = None, part: int = 0, **meta) -> Chunk:
    path = ["Doc", "Sec"] if path is None else path
    return Chunk(chunk_id=cid, doc_id=doc, header_path=path, level=len(path), start=0, end=len(text), text=text,
                 search_text=text, sha256="0" * 64, tokens=0, part=part, metadata=meta)


# ---- QueryCache --------------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lru_eviction_order():
    cache: QueryCache[str] = QueryCache(size=2, ttl_s=0, clock=FakeClock())
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # a becomes most recently used
    cache.put("c", "C")  # evicts b, the least recently used
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c"), len(cache)) == ("A", "C", 2)
    cache.put("d", "D")  # now a is the oldest use (a, c were read in that order)
    assert cache.get("a") is None and cache.get("c") == "C" and cache.get("d") == "D"
    assert (cache.hits, cache.misses) == (5, 2)


def test_put_of_an_existing_key_refreshes_it():
    cache: QueryCache[int] = QueryCache(size=2, ttl_s=0)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 3)  # a is now the newest
    cache.put("c", 4)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (3, None, 4)


def test_ttl_expiry_with_a_fake_clock():
    clock = FakeClock()
    cache: QueryCache[str] = QueryCache(size=10, ttl_s=10, clock=clock)
    cache.put("k", "v")
    clock.now = 10.0
    assert cache.get("k") == "v"  # exactly ttl: still fresh
    clock.now = 10.5
    assert cache.get("k") is None and len(cache) == 0  # expired and removed
    cache.put("k", "v2")  # stamped at 10.5
    clock.now = 18.0
    cache.put("k", "v3")  # re-put refreshes the stamp to 18
    clock.now = 27.0
    assert cache.get("k") == "v3"
    clock.now = 28.5
    assert cache.get("k") is None


def test_ttl_zero_never_expires_and_size_zero_disables():
    clock = FakeClock()
    cache: QueryCache[str] = QueryCache(size=1, ttl_s=0, clock=clock)
    cache.put("k", "v")
    clock.now = 1e9
    assert cache.get("k") == "v"
    off: QueryCache[str] = QueryCache(size=0)
    off.put("k", "v")
    assert off.get("k") is None and len(off) == 0
    cache.clear()
    assert len(cache) == 0


# ---- build_context -----------------------------------------------------------------------------------------------


def words(blocks):
    return [len(b.split()) for b in blocks]


def hit(cid: str, doc: str, path: list[str], text: str) -> Hit:
    return Hit(chunk_id=cid, doc_id=doc, header_path=path, text=text, score=1.0)


def test_context_fits_the_budget_and_skips_a_too_big_block():
    hs = [
        hit("a#0", "a.md", ["A"], "one two three"),  # "[1] a.md — A" + 3 words = 7 tokens
        hit("b#0", "b.md", ["B"], " ".join(["w"] * 20)),  # 4 + 20 = 24 tokens: does not fit
        hit("c#0", "c.md", ["C", "D"], "x"),  # "[2] c.md — C > D" + 1 = 7 tokens
        hit("e#0", "e.md", ["E"], "y"),  # 5 tokens: 7 + 7 + 5 = 19 > 15
    ]
    ctx = build_context(hs, 15, words)
    assert ctx.citations == {1: "a#0", 2: "c#0"}
    assert ctx.dropped == ["b#0", "e#0"]
    assert ctx.tokens == 14 == words([ctx.text])[0]
    assert ctx.text == "[1] a.md — A\none two three\n\n[2] c.md — C > D\nx\n"


def test_context_never_exceeds_the_budget():
    hs = [hit(f"h#{i}", "h.md", ["H"], " ".join(["w"] * (i % 5 + 1))) for i in range(30)]
    for budget in (1, 4, 5, 6, 11, 23, 50, 1000):
        ctx = build_context(hs, budget, words)
        assert ctx.tokens <= budget and words([ctx.text])[0] == ctx.tokens
        assert len(ctx.citations) + len(ctx.dropped) == 30
        # numbering is dense from 1 and follows rank order
        assert list(ctx.citations) == list(range(1, len(ctx.citations) + 1))
        order = [h.chunk_id for h in hs]
        cited = list(ctx.citations.values())
        assert cited == sorted(cited, key=order.index)
    assert build_context(hs, 1, words).text == ""  # nothing fits one token
    for bad in (0, -5):
        with pytest.raises(InputError, match=f"positive number of tokens \\(got {bad}\\)"):
            build_context(hs, bad, words)


def test_context_without_header():
    ctx = build_context([hit("n#0", "n.md", [], "plain text")], 100, words)
    assert ctx.text == "[1] n.md — (no header)\nplain text\n" and ctx.tokens == 7  # "(no header)" is 2 words
    assert ctx.to_dict()["citations"] == {1: "n#0"}


# ---- Filters -----------------------------------------------------------------------------------------------------


def test_filters_parse():
    f = Filters.parse(["path=teams/*", "format=md", "fm.faction=Iron Wardens", "fm.tags = Elite"])
    assert f == Filters(path="teams/*", format="md", fields=(("faction", "Iron Wardens"), ("tags", "Elite")))
    assert not f.empty and Filters.parse([]).empty
    assert Filters.parse(["doc_type=pdf"]).format == "pdf"
    assert Filters.parse(["path=a=b"]).path == "a=b"  # only the first '=' splits
    assert hash(Filters.parse(["path=x"])) == hash(Filters.parse(["path=x"]))  # usable as a cache key
    assert Filters.parse(["format=MD"]).format == Filters.parse(["format=.md"]).format == "md"  # as files name it


def test_a_filter_key_given_twice_is_refused_not_overwritten():
    """`--filter path=a --filter path=b` kept only b, silently (probe, 2026-11-29); frontmatter fields may repeat
    (each must hold)."""
    for items in (["path=a", "path=b"], ["format=md", "doc_type=pdf"]):
        with pytest.raises(InputError, match="is given twice"):
            Filters.parse(items)
    assert len(Filters.parse(["fm.tags=a", "fm.tags=b"]).fields) == 2


@pytest.mark.parametrize("item, what", [("colour=red", "unknown filter key 'colour'"), ("fm.=x", "unknown filter key"),
                                        ("teams", "expected path=GLOB"),
                                        # values no document can have: an empty table, exit 0, before (2026-11-29)
                                        ("format=exe", "no document has format 'exe'; formats: beir, docx, html, md"),
                                        ("format=", "an empty value matches no document"),
                                        ("path=", "an empty value matches no document"),
                                        ("fm.faction= ", "an empty value matches no document")])
def test_filters_parse_errors(item, what):
    with pytest.raises(InputError) as exc:
        Filters.parse([item])
    assert what in str(exc.value) and repr(item) in str(exc.value)


def test_filters_accepts():
    c = chunk("t#0", "x", doc="teams/iron.md", format="md", faction="Iron Wardens", tags=["Elite", "Melee"], points=3)
    assert Filters(path="teams/*").accepts(c)
    assert not Filters(path="weapons/*").accepts(c)
    assert not Filters(path="Teams/*").accepts(c)  # the path glob is case-sensitive
    assert Filters(format="md").accepts(c) and not Filters(format="pdf").accepts(c)
    assert Filters.parse(["fm.faction=iron wardens"]).accepts(c)  # values are case-insensitive
    assert not Filters.parse(["fm.faction=Iron"]).accepts(c)  # whole value, not a substring
    assert Filters.parse(["fm.tags=elite"]).accepts(c)  # list-valued: contains
    assert not Filters.parse(["fm.tags=Ranged"]).accepts(c)
    assert not Filters.parse(["fm.missing=x"]).accepts(c)
    assert Filters.parse(["fm.points=3"]).accepts(c)
    assert Filters.parse(["path=teams/*", "fm.tags=melee", "format=md"]).accepts(c)
    assert not Filters.parse(["path=teams/*", "fm.tags=melee", "format=html"]).accepts(c)


def test_filters_mask():
    cs = [chunk("a", "x", doc="teams/a.md", format="md"), chunk("b", "x", doc="b.md", format="md"),
          chunk("c", "x", doc="teams/c.html", format="html")]
    m = Filters(path="teams/*").mask(cs)
    assert m.dtype == bool and m.tolist() == [True, False, True]
    assert Filters(path="teams/*", format="md").mask(cs).tolist() == [True, False, False]
    assert Filters().mask([]).shape == (0,) and isinstance(m, np.ndarray)
