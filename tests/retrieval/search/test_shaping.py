"""Shaping a query's hits: the adaptive cut, pinning a comparison's entities, section expansion (hand-computed)."""

from __future__ import annotations

import numpy as np
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.results import Hit
from ragrig.retrieval.search.shaping import adaptive_cut, expand_sections, pin_entities


def hits(*scores: float) -> list[Hit]:
    return [Hit(chunk_id=f"c{i}", doc_id="d.md", header_path=["H"], text="t", score=s) for i, s in enumerate(scores)]


def ids(hs: list[Hit]) -> list[str]:
    return [h.chunk_id for h in hs]


# ---- adaptive_cut ------------------------------------------------------------------------------------------------


def test_cut_at_the_largest_gap():
    hs = hits(1.0, 0.95, 0.9, 0.4, 0.35, 0.3)
    # drops /top: .05 .05 .5 .05 .05 -> cut after index 2
    assert ids(adaptive_cut(hs, 1, 10, 0.25)) == ["c0", "c1", "c2"]


def test_no_big_gap_keeps_max_results():
    hs = hits(*[1.0 - 0.05 * i for i in range(12)])
    assert ids(adaptive_cut(hs, 3, 10, 0.25)) == [f"c{i}" for i in range(10)]
    hs = hits(1.0, 0.99, 0.98, 0.97, 0.1)  # the big drop lies beyond max_results=4
    assert ids(adaptive_cut(hs, 1, 4, 0.25)) == ["c0", "c1", "c2", "c3"]


def test_gaps_before_min_results_are_ignored():
    hs = hits(1.0, 0.3, 0.29, 0.1, 0.09)
    # min 3: only the drops after the 3rd hit count: .19 (3rd->4th) and .01 -> below .25: keep all
    assert ids(adaptive_cut(hs, 3, 10, 0.25)) == ["c0", "c1", "c2", "c3", "c4"]
    assert ids(adaptive_cut(hs, 3, 10, 0.15)) == ["c0", "c1", "c2"]
    # with min 1 the .7 drop wins
    assert ids(adaptive_cut(hs, 1, 10, 0.25)) == ["c0"]


def test_gap_threshold_is_relative_to_the_top_score_and_inclusive():
    hs = hits(4.0, 3.0, 2.5)  # drops: 1/4 = .25, .5/4 = .125
    assert ids(adaptive_cut(hs, 1, 10, 0.25)) == ["c0"]
    assert ids(adaptive_cut(hs, 1, 10, 0.26)) == ["c0", "c1", "c2"]


def test_equal_gaps_cut_at_the_first():
    assert ids(adaptive_cut(hits(1.0, 0.5, 0.0), 1, 10, 0.25)) == ["c0"]


def test_cut_edge_cases():
    assert adaptive_cut([], 1, 10, 0.25) == []
    hs = hits(1.0, 0.1)
    assert ids(adaptive_cut(hs, 2, 10, 0.25)) == ["c0", "c1"]  # no more than min_results: unchanged
    assert ids(adaptive_cut(hits(0.0, 0.0, 0.0), 1, 10, 0.25)) == ["c0", "c1", "c2"]  # zero top score


# ---- pin_entities ------------------------------------------------------------------------------------------------


def test_pinned_entities_keep_their_places_or_take_the_last_ones():
    hs = hits(1.0, 0.9, 0.8, 0.7)
    x = Hit(chunk_id="x", doc_id="d.md", header_path=["X"], text="x", score=0.0)
    # c2 is already in the list; x is not: c2 stays where it is, x goes last, the rest fills the other places
    got = pin_entities(hs, [("Y", hs[2]), ("X", x)], top_k=3)
    assert ids(got) == ["c0", "c2", "x"]
    assert [h.reason for h in got] == ["", "comparison: Y", "comparison: X"]
    # two entities whose best chunk is the same: pinned once, with the later entity's name
    got = pin_entities(hits(1.0, 0.9), [("A", x), ("B", x)], top_k=2)
    assert ids(got) == ["c0", "x"] and got[1].reason == "comparison: B"
    # more pins than places: the pins win
    assert ids(pin_entities(hits(1.0, 0.9), [("A", x)], top_k=1)) == ["x"]


# ---- expand_sections -----------------------------------------------------------------------------------------------


def chunk(cid: str, tokens: int, path: list[str]) -> Chunk:
    return Chunk(chunk_id=cid, doc_id="d.md", header_path=path, level=len(path), start=0, end=1, text=cid,
                 search_text=cid, sha256="0" * 64, tokens=tokens)


def test_section_expansion_adds_siblings_in_order_within_the_budget():
    sec = ["Doc", "Sec"]
    chunks = {c.chunk_id: c for c in [chunk("m", 20, sec + ["M"]), chunk("s1", 50, sec + ["A"]),
                                      chunk("s2", 25, sec + ["B"]), chunk("s3", 10, sec + ["C"])]}
    sibs = [chunks["m"], chunks["s1"], chunks["s2"], chunks["s3"]]
    top = Hit.from_chunk(chunks["m"], 0.8)
    got = expand_sections([top], 60, chunks.__getitem__, lambda c: sibs)
    # m (20) + s1 (50) would be 70 > 60: skipped; s2 (25) -> 45; s3 (10) -> 55
    assert ids(got) == ["m", "s2", "s3"]
    assert [h.reason for h in got[1:]] == ["section of m", "section of m"] and all(h.score == 0.8 for h in got)
    big = Hit.from_chunk(chunks["s1"], 1.0)  # a chunk at or over the budget brings nothing
    assert ids(expand_sections([big], 50, chunks.__getitem__, lambda c: sibs)) == ["s1"]


def test_calibrated_relevance_is_the_share_of_background_pairs_beaten():
    from ragrig.retrieval.search.calibration import Calibration, calibrate

    cal = Calibration(np.array([0.1, 0.2, 0.3, 0.4]))
    assert cal.relevance(np.array([0.0, 0.25, 0.3, 1.0])).tolist() == [0.0, 0.5, 0.625, 1.0]  # ties count half
    assert Calibration(np.zeros(0)).relevance(np.array([0.2])).tolist() == [1.0]  # nothing to compare with
    # pairs from one document are left out: title 0 (doc a) vs chunks of b only, title 1 (doc b) vs a only
    titles = np.array([[1.0, 0.0], [0.0, 1.0]])
    chunks = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    cal = calibrate(["a", "b"], titles, ["a", "b", "b"], chunks)
    assert cal.background.tolist() == [0.0, 0.0, 0.6]  # a.b1 = 0.6, a.b2 = 0.0, b.a = 0.0; a.a, b.b1, b.b2 left out
