"""Multi-part questions as sub-queries, without an LLM: "How do I tell it to dispatch on 'kind', and can I change
the error people see?" asks two things, and one ranking for the whole sentence tends to serve the louder part.
``split_question`` cuts a question into its sentences and its ``, and`` / ``; `` / ``, but`` clauses; the retriever
ranks the whole question and each part (one batch), and ``merge`` joins the rankings by reciprocal rank fusion
(k = 60, every list weighing one, the constant of the RRF paper: nothing tuned here).

A part must carry at least ``MIN_WORDS`` words of its own, so "What is X and Y?" stays one question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_WORDS = 4
RRF_K = 60.0

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`@])")
_CLAUSE = re.compile(r"(\s*(?:,\s*(?:and|but|or)\s+|;\s+|\s+(?:and also|as well as|plus)\s+))", re.I)
_WORDS = re.compile(r"\w+")


def split_question(text: str) -> list[str]:
    """The parts of a multi-part question (sentences, then clauses), or [] when it asks one thing."""
    parts: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        pieces = _CLAUSE.split(sentence)  # clause, separator, clause, ...
        current = pieces[0]
        for sep, clause in zip(pieces[1::2], pieces[2::2]):
            if len(_WORDS.findall(clause)) < MIN_WORDS or len(_WORDS.findall(current)) < MIN_WORDS:
                current = current + sep + clause  # too short to stand alone: keep it with its neighbour, as written
            else:
                parts.append(current.strip(" ,;"))
                current = clause
        parts.append(current.strip(" ,;"))
    parts = [p for p in parts if p]
    short = [i for i, p in enumerate(parts) if len(_WORDS.findall(p)) < MIN_WORDS]
    for i in reversed(short):  # a short sentence joins the one before it (or after it, when it is the first)
        if len(parts) > 1:
            j = i - 1 if i > 0 else 1
            parts[j] = f"{parts[j]} {parts[i]}" if j < i else f"{parts[i]} {parts[j]}"
            del parts[i]
    return parts if len(parts) > 1 else []


def merge(rankings: Sequence[Sequence[int]], order: dict[int, int] | None = None) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of several rankings of rows: (row, 0..1 score) by (-score, ``order[row]``, row);
    1.0 means first in every ranking."""
    acc: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            acc[row] = acc.get(row, 0.0) + 1.0 / (RRF_K + rank)
    best = len(rankings) / (RRF_K + 1) if rankings else 1.0
    key = order or {}
    return [(row, s / best) for row, s in sorted(acc.items(), key=lambda kv: (-kv[1], key.get(kv[0], kv[0]), kv[0]))]
