"""Which pairs share a batch: ``one_per_section`` never puts two pairs of one section together (their positives
would be each other's false negatives), still yields every pair once, seeded; a headerless chunk is its own
section; and the setting is part of the training's identity."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from ragrig.retrieval.adapt import output
from ragrig.retrieval.adapt.batches import one_per_section


def _batches(sections, texts=None, batch_size=8, seed=0):
    n = len(sections)
    texts = texts or [(f"a{i}", f"p{i}") for i in range(n)]
    data = Dataset.from_dict({"anchor": [a for a, _ in texts], "positive": [p for _, p in texts]})
    sampler = one_per_section(sections)(data, batch_size=batch_size, drop_last=False, valid_label_columns=["label"],
                                        generator=torch.Generator(), seed=seed)
    return list(sampler)


def test_no_batch_holds_two_pairs_of_one_section_and_every_pair_comes_once() -> None:
    sections = [("doc", ("Guide", f"Part {i % 10}")) for i in range(40)]  # four pairs in each of ten sections
    batches = _batches(sections)
    for batch in batches:
        assert len({sections[i] for i in batch}) == len(batch), batch
    assert sorted(i for b in batches for i in b) == list(range(40))
    assert max(len(b) for b in batches) == 8
    assert _batches(sections) == batches  # seeded
    assert _batches(sections, seed=1) != batches


def test_the_same_section_in_another_document_is_another_section() -> None:
    sections = [(f"doc{i % 2}", ("Intro",)) for i in range(8)]
    assert all(len(b) <= 2 for b in _batches(sections, batch_size=4))
    assert any(len(b) == 2 for b in _batches(sections, batch_size=4))


def test_a_headerless_chunk_is_a_section_of_its_own() -> None:
    """A document without headers: its cloze pairs are distinct chunks, not near-copies; grouping them by document
    would leave one pair a batch."""
    sections = [("paper.pdf", ())] * 16
    assert [len(b) for b in _batches(sections, batch_size=8)] == [8, 8]


def test_a_repeated_text_still_never_shares_a_batch() -> None:
    sections = [("d", (f"s{i}",)) for i in range(8)]
    texts = [("same anchor" if i < 2 else f"a{i}", f"p{i}") for i in range(8)]
    for batch in _batches(sections, texts, batch_size=8):
        assert not {0, 1} <= set(batch)


def test_a_sampler_for_other_rows_is_refused() -> None:
    with pytest.raises(ValueError, match="3 training rows but 2 sections"):
        one_per_section([("d", ("a",)), ("d", ("b",))])(Dataset.from_dict({"anchor": ["x", "y", "z"]}),
                                                        batch_size=2, drop_last=False)


def test_the_batching_is_part_of_the_recipe_and_the_old_one_keeps_its_name(make_config) -> None:
    old = make_config(None, "embedding.adapt.batches=no_duplicates")
    new = make_config(None, "embedding.adapt.batches=one_per_section")
    assert output.recipe_hash(old, "m", "c") != output.recipe_hash(new, "m", "c")
    # the hash folders got before the setting existed (its dump had no "batches"): they keep their names
    assert output.recipe_hash(old, "all-MiniLM-L6-v2", "abc") == "e975cdd361"
