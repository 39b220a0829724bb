"""Which pairs may share a training batch.

In-batch negatives score every anchor against every positive in its batch and call all but its own wrong. Two
pairs made from one section (its header -> its body; one of its sentences -> the rest of it; a library term -> it;
its parent -> it) hold near-copies of one text as their positives, so each pair's positive is the other's false
negative: the loss pushes a header away from its own section's body. sentence-transformers' ``NO_DUPLICATES``
sampler keeps a repeated *text* out of a batch; ``one_per_section`` also keeps a repeated *section* out
(``embedding.adapt.batches``). Both are the library's own sampler: the section is one more value of the pair's
row that must not repeat within a batch, so the data order and the batch count are the library's. A chunk
without a header path is a section of its own (a headerless document's chunks are distinct texts, not near-copies:
grouping them by document would leave one pair a batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Section = tuple[str, tuple[str, ...]]  # (doc id, header path), as retrieval.adapt.pairs.Pair.section


def one_per_section(sections: Sequence[Section]) -> Callable[..., Any]:
    """A ``batch_sampler`` factory for ``SentenceTransformerTrainingArguments``: NO_DUPLICATES, with row ``i``'s
    section ``sections[i]`` counted among its values (a tuple: never equal to a text value)."""
    from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

    keys = [("section", doc, tuple(path)) if path else ("row", i) for i, (doc, path) in enumerate(sections)]

    class OnePerSection(NoDuplicatesBatchSampler):  # type: ignore[misc]
        def _iter_one_pass(self, get_sample_values: Callable[[int], Any], has_overlap: Callable[..., bool]) -> Any:
            def values(index: int) -> set[Any]:
                return set(get_sample_values(index)) | {keys[index]}

            return super()._iter_one_pass(values, has_overlap)

    def make(dataset: Any, **kwargs: Any) -> Any:
        if len(dataset) != len(keys):
            raise ValueError(f"{len(dataset)} training rows but {len(keys)} sections")
        return OnePerSection(dataset, **kwargs)

    return make
