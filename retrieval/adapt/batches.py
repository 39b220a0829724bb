"""Which pairs share a training batch (``embedding.adapt.batches``).

In-batch negatives score every anchor against every positive of its batch and call all but its own wrong. In a
batch drawn at random from a whole corpus most of those negatives are about something else and easy to tell
apart: the loss learns little from them. ``by_document`` fills each batch with the pairs of one document first
(the documents, and the pairs inside each, in an order drawn from the seed), so the negatives are the sections
beside the right one: topic-aware batches (Hofstatter et al. 2021, TAS-B, batched queries by topic cluster; a
document is the topic a corpus gives for free). Inside a batch no text repeats (sentence-transformers'
``NO_DUPLICATES`` rule) and no section does: two pairs of one section hold near-copies of its text as their
positives, each the other's false negative, and a document's batch would otherwise hold many such. A pair left
out of a batch by that rule goes into the next one, in its place. ``no_duplicates`` (the default) is the
library's own sampler, a random order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

Section = tuple[str, tuple[str, ...]]  # (doc id, header path), as retrieval.adapt.pairs.Pair.section


def document_order(sections: Sequence[Section], perm: Sequence[int], doc_perm: Sequence[int]) -> list[int]:
    """The rows in ``perm``'s order, grouped by document; the documents (sorted, then put in ``doc_perm``'s order)
    one after another."""
    docs = sorted({doc for doc, _ in sections})
    rank = {docs[j]: r for r, j in enumerate(doc_perm)}
    return sorted(perm, key=lambda i: rank[sections[i][0]])  # stable: inside a document, perm's order


def fill_batches(order: Sequence[int], values: Callable[[int], set[Any]], size: int,
                 drop_last: bool) -> Iterator[list[int]]:
    """Batches of ``size`` rows taken in ``order``, none sharing a value with a row already in its batch; a row
    that does waits for the next batch, ahead of the rows after it."""
    remaining = list(order)
    while remaining:
        batch: list[int] = []
        taken: set[Any] = set()
        rest: list[int] = []
        for i in remaining:
            v = values(i)
            if len(batch) < size and taken.isdisjoint(v):
                batch.append(i)
                taken |= v
            else:
                rest.append(i)
        if len(batch) < size and drop_last:
            return
        yield batch
        remaining = rest


def by_document(sections: Sequence[Section]) -> Callable[..., Any]:
    """A ``batch_sampler`` factory for ``SentenceTransformerTrainingArguments``: row ``i`` is of section
    ``sections[i]`` (a chunk without a header path is a section of its own)."""
    import torch
    from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

    keys = [("section", doc, tuple(path)) if path else ("row", i) for i, (doc, path) in enumerate(sections)]
    n_docs = len({doc for doc, _ in sections})

    class ByDocument(NoDuplicatesBatchSampler):  # type: ignore[misc]
        def _iter_one_pass(self, get_sample_values: Callable[[int], Any], has_overlap: Callable[..., bool]) -> Any:
            perm = torch.randperm(len(self.dataset), generator=self.generator).tolist()
            doc_perm = torch.randperm(n_docs, generator=self.generator).tolist()
            order = document_order(sections, perm, doc_perm)
            yield from fill_batches(order, lambda i: set(get_sample_values(i)) | {keys[i]}, self.batch_size,
                                    self.drop_last)

    def make(dataset: Any, **kwargs: Any) -> Any:
        if len(dataset) != len(keys):
            raise ValueError(f"{len(dataset)} training rows but {len(keys)} sections")
        return ByDocument(dataset, **kwargs)

    return make
