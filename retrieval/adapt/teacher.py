"""Pseudo-labels from a cross-encoder (``embedding.adapt.loss: margin_mse``), as GPL does (Wang et al., NAACL 2022:
"GPL: Generative Pseudo Labeling for Unsupervised Domain Adaptation of Dense Retrieval"): the teacher reads every
(anchor, positive) and (anchor, mined negative) pair, and the encoder learns the margins between its scores
rather than "the positive, and nothing else". A mined negative that answers the anchor as well as the positive
(a false negative: the bane of mined negatives, docs/adapt.md's E8) gets a margin near zero and teaches nothing
wrong. GPL's anchors are generated queries; ours are the pairs' structural anchors (no generator ships offline).

Deterministic: the pairs are scored in one call, in their order (the scorer sorts them by length and batches
them, so the same pairs give the same batches and the same scores)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.retrieval.adapt.pairs import Pair
from ragrig.retrieval.encoders.cross_encoder import PairScorer


def label(pairs: Sequence[Pair], scorer: PairScorer, max_tokens: int | None = None) -> list[Pair]:
    """``pairs`` (each with the same number of negatives) with their teacher ``scores``: the positive's first,
    then each negative's."""
    rows = [(p.anchor, text) for p in pairs for text in (p.positive, *p.negatives)]
    if not rows:
        return list(pairs)
    got = scorer.score(rows, max_tokens)
    if len(got) != len(rows):
        raise ValueError(f"the teacher gave {len(got)} scores for {len(rows)} pairs")
    if not np.all(np.isfinite(got)):
        raise InputError(f"embedding.adapt.teacher: {scorer.id} gave {int(np.sum(~np.isfinite(got)))} non-finite "
                         f"score(s) for {len(rows)} pairs; it cannot label them")
    out, at = [], 0
    for p in pairs:
        n = 1 + len(p.negatives)
        out.append(replace(p, scores=tuple(float(x) for x in got[at : at + n])))
        at += n
    return out


CANDIDATES = 4  # mined candidates the teacher vets per negative wanted (``denoise``)


def denoise(pairs: Sequence[Pair], scorer: PairScorer, n: int, max_tokens: int | None = None) -> list[Pair]:
    """``pairs``, each mined with several candidate negatives (best BM25 first), cut to ``n`` negatives the
    teacher scores below the pair's positive, in BM25's order (RocketQA's denoised hard negatives, Qu et al.,
    NAACL 2021: most of the top lexical "negatives" of a question are in fact answers). A pair with fewer such
    candidates is topped up with the others the teacher scores lowest, so every pair keeps ``n``. The scores
    kept are the positive's, then each kept negative's."""
    out = []
    for p in label(pairs, scorer, max_tokens):
        pos, cands = p.scores[0], list(zip(p.negatives, p.scores[1:]))
        keep = [c for c in cands if c[1] < pos][:n]
        rest = sorted((c for c in cands if c not in keep), key=lambda c: c[1])
        keep += rest[: n - len(keep)]
        out.append(replace(p, negatives=tuple(t for t, _ in keep), scores=(pos, *(s for _, s in keep))))
    return out


def consistent(pairs: Sequence[Pair], scorer: PairScorer, max_tokens: int | None = None) -> list[Pair]:
    """The pairs (each mined with competitor negatives) whose positive the teacher scores above every
    competitor, without the competitors: an anchor the teacher cannot tie to its own section rather than to the
    best lexical match elsewhere is too vague to teach (round-trip consistency filtering of pseudo-queries, as
    Promptagator and InPars filter theirs)."""
    return [replace(p, negatives=(), scores=())
            for p in label(pairs, scorer, max_tokens) if all(p.scores[0] > s for s in p.scores[1:])]
