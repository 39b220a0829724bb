"""Selection after fusion: de-duplication keys, the walk and its one-key shortcut, min_relevance and per-query
limits, on batches of several queries (hand-computed)."""

from __future__ import annotations

import numpy as np
import pytest
from ragrig.configs.models import RetrievalConfig
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.index.chunk_table import dedup_key
from ragrig.retrieval.search.fusion import fuse
from ragrig.retrieval.search.select import dedup_first_of_group, dedup_walk, select
from search_batches import batch_of, fusion


def chunk(cid: str, text: str, doc: str = "d.md", path: list[str] | None = None, part: int = 0) -> Chunk:
    path = ["Doc", "Sec"] if path is None else path
    return Chunk(chunk_id=cid, doc_id=doc, header_path=path, level=len(path), start=0, end=len(text), text=text,
                 search_text=text, sha256="0" * 64, tokens=0, part=part)


def test_identical_text_up_to_whitespace_and_case_is_a_duplicate():
    a = dedup_key(chunk("a", "Move  up to\nsix inches."))
    b = dedup_key(chunk("b", "move up to six INCHES.", doc="other.md", path=["X"]))
    c = dedup_key(chunk("c", "move up to seven inches."))
    assert a == b and len(a) == 1
    assert not set(a) & set(c)


def test_pieces_of_one_section_share_a_key():
    p1 = dedup_key(chunk("p1", "first half", part=1))
    p2 = dedup_key(chunk("p2", "second half", part=2))
    other = dedup_key(chunk("o1", "second half", path=["Doc", "Other"], part=1))
    assert len(p1) == 2 and p1[1] == p2[1] == ("section", "d.md", ("Doc", "Sec"), 2)
    assert p1[0] != p2[0]
    assert p2[0] == other[0]  # same text, different section: still a duplicate by text
    assert p1[1] != other[1]
    assert len(dedup_key(chunk("w", "whole section"))) == 1  # part 0: text key only


def test_dedup_walk_hand_computed():
    # A{t1,s1} kept; B{t2,s1} dropped (s1); C{t2,s2} kept: B's keys never count, it was dropped
    keys = [(("t", 1), ("s", 1)), (("t", 2), ("s", 1)), (("t", 2), ("s", 2)), (("t", 3),), (("t", 1),)]
    prone = np.array([True, True, True, False, True])
    assert dedup_walk(keys, prone, None).tolist() == [True, False, True, True, False]
    # two rows kept by position 2: the walk stops there, later rows are left for the cut
    assert dedup_walk(keys, prone, 2).tolist() == [True, False, True, True, True]


def test_dedup_first_of_group_equals_the_walk_when_rows_share_one_key():
    rng = np.random.default_rng(5)
    for _ in range(500):
        n = int(rng.integers(0, 30))
        group = np.where(rng.random(n) < 0.6, rng.integers(0, 6, n), -1)
        # each row: its own text key, plus the one shared key of its group
        keys = [((("t", i),) + ((("s", int(g)),) if g >= 0 else ())) for i, g in enumerate(group)]
        assert dedup_first_of_group(group).tolist() == dedup_walk(keys, group >= 0, None).tolist(), group.tolist()


def rc(**kw: object) -> RetrievalConfig:
    return RetrievalConfig(**kw)


def selected(batch, ids, r, limits, relevance=None):
    f = fuse(batch, fusion("rrf", rrf_k=1))
    rel = None if relevance is None else np.array([relevance[ids[int(x)]] for x in batch.rows])
    sel = select(batch, f, r, limits, batch_dedup(batch, ids), rel)
    return [[ids[int(batch.rows[e])] for e in sel.of(q)[0]] for q in range(len(batch))], sel


def batch_dedup(batch, ids):
    from ragrig.retrieval.search.candidates import DedupKeys

    return DedupKeys.build([KEYS.get(i, (("own", i),)) for i in ids])


KEYS = {"a": (("t", "x"),), "b": (("t", "x"),), "c": (("t", "c"), ("s", 1)), "d": (("t", "d"), ("s", 1)),
        "e": (("t", "x"), ("s", 1))}


def test_select_cuts_each_query_at_its_own_limit_and_min_relevance():
    q1 = {"bm25": {"f": 5.0, "g": 4.0, "h": 3.0, "i": 2.0}}  # rrf k=1 scaled: f 1, g 2/3, h 1/2, i 2/5
    q2 = {"bm25": {"j": 2.0, "k": 1.0}}
    batch, ids = batch_of([q1, q2], KEYS)
    got, sel = selected(batch, ids, rc(), [2, None])
    assert got == [["f", "g"], ["j", "k"]]
    assert sel.scores.tolist() == pytest.approx([1.0, 2 / 3, 1.0, 2 / 3])
    # the floor is on each candidate's calibrated relevance, not on its rank: g falls out, h stays
    rel = {"f": 0.99, "g": 0.3, "h": 0.5, "i": 0.49, "j": 0.2, "k": 0.1}
    got, _ = selected(batch, ids, rc(min_relevance=0.5), [None, None], rel)
    assert got == [["f", "h"], []]  # 0.5 is kept (>=), 0.49 is not; an off-topic query keeps nothing
    got, _ = selected(batch, ids, rc(min_relevance=0.5), [1, 5], rel)
    assert got == [["f"], []]
    with pytest.raises(ValueError, match="calibrated relevance"):
        selected(batch, ids, rc(min_relevance=0.5), [None, None])


@pytest.mark.parametrize("shared_two", [False, True])
def test_duplicates_drop_the_later_one_within_a_query_only(shared_two):
    """a and b have the same text; c and d are pieces of one section. Across queries nothing is a duplicate.
    With e (same text as a AND the section of c, d) a row shares two keys: that query is walked, same rule."""
    q1 = {"bm25": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    q2 = {"bm25": {"b": 2.0, "d": 1.0}} if not shared_two else {"bm25": {"e": 3.0, "b": 2.0, "d": 1.0}}
    batch, ids = batch_of([q1, q2], KEYS)
    assert (batch.groups() is None) == shared_two
    got, sel = selected(batch, ids, rc(), [None, None])
    assert got[0] == ["a", "c"]
    assert got[1] == (["b", "d"] if not shared_two else ["e"])  # e drops b (text) and d (section)
    assert sel.dropped.tolist() == [2, 0 if not shared_two else 2]
    off, _ = selected(batch, ids, rc(dedup=False), [None, None])
    assert off[0] == ["a", "b", "c", "d"]
    # the limit counts kept rows: the first two distinct ones
    two, _ = selected(batch, ids, rc(), [2, 1])
    assert two == [["a", "c"], ["b" if not shared_two else "e"]]
