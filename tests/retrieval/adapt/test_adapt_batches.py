"""``embedding.adapt.batches: by_document``: one document's pairs fill a batch first, with no text and no section
twice in a batch (retrieval/adapt/batches.py)."""

from __future__ import annotations

import hashlib
import json

import pytest
from ragrig.retrieval.adapt import output
from ragrig.retrieval.adapt.batches import by_document, document_order, fill_batches


def test_rows_are_grouped_by_document_in_the_drawn_orders() -> None:
    sections = [("a.md", ("X",)), ("b.md", ("Y",)), ("a.md", ("Z",)), ("b.md", ("W",))]
    # documents sorted (a, b), then put in doc_perm's order: b first; inside each, perm's order
    assert document_order(sections, [3, 0, 2, 1], [1, 0]) == [3, 1, 0, 2]
    assert document_order(sections, [3, 0, 2, 1], [0, 1]) == [0, 2, 3, 1]


def test_a_row_that_clashes_waits_for_the_next_batch_ahead_of_the_rest() -> None:
    values = {0: {"s1"}, 1: {"s1"}, 2: {"s2"}, 3: {"s3"}, 4: {"s2", "t"}}
    assert list(fill_batches([0, 1, 2, 3, 4], values.__getitem__, 2, drop_last=False)) == [[0, 2], [1, 3], [4]]
    assert list(fill_batches([0, 1, 2, 3, 4], values.__getitem__, 2, drop_last=True)) == [[0, 2], [1, 3]]
    assert list(fill_batches([], values.__getitem__, 2, drop_last=False)) == []


def _dataset(rows: list[tuple[str, str]]):
    from datasets import Dataset

    return Dataset.from_dict({"anchor": [a for a, _ in rows], "positive": [p for _, p in rows]})


def _batches(sections, rows, size: int, seed: int) -> list[list[int]]:
    import torch

    sampler = by_document(sections)(_dataset(rows), batch_size=size, drop_last=False,
                                    generator=torch.Generator(), seed=seed)
    return [list(b) for b in sampler]


def test_the_sampler_keeps_a_document_together_and_never_repeats_a_section_or_a_text() -> None:
    # three documents of four sections, two pairs a section (header -> body, sentence -> rest); one anchor shared
    sections, rows = [], []
    for d in "abc":
        for s in range(4):
            for kind in ("title", "sentence"):
                sections.append((f"{d}.md", (f"S{s}",)))
                rows.append((f"{d} {s} {kind}" if (d, s, kind) != ("c", 3, "title") else "a 0 title",
                             f"body of {d} {s} ({kind})"))
    batches = _batches(sections, rows, 4, seed=0)
    assert sorted(i for b in batches for i in b) == list(range(len(rows)))  # every pair once
    for b in batches:
        assert len({sections[i] for i in b}) == len(b)  # no section twice
        texts = [t for i in b for t in rows[i]]
        assert len(set(texts)) == len(texts)  # no text twice
    # a document's first pass (one pair of each of its 4 sections) is one batch of that document alone
    assert sum(len({sections[i][0] for i in b}) == 1 for b in batches) >= 3
    assert batches == _batches(sections, rows, 4, seed=0)  # the seed decides the order
    assert batches != _batches(sections, rows, 4, seed=1)


def test_the_setting_is_part_of_the_recipe_and_the_default_keeps_earlier_folder_names(make_config) -> None:
    default, grouped = make_config(), make_config(None, "embedding.adapt.batches=by_document")
    assert output.recipe_hash(default, "m", "c") != output.recipe_hash(grouped, "m", "c")
    recipe = default.embedding.adapt.model_dump()
    del recipe["batches"]  # how the hash was made before the setting existed
    before = json.dumps({"adapt": recipe, "base": "m", "corpus": "c", "version": output.ADAPT_VERSION},
                        sort_keys=True)
    assert output.recipe_hash(default, "m", "c") == hashlib.sha256(before.encode()).hexdigest()[:10]
    with pytest.raises(Exception, match="batches"):
        make_config(None, "embedding.adapt.batches=by_topic")
