"""The one rich console, and short metric labels for narrow table columns."""

from __future__ import annotations

import sys

from rich.console import Console

# a terminal gets its own width; a pipe or a CI log gets 120 columns, so numbers are never cut off
console = Console(stderr=False, highlight=False, width=None if sys.stdout.isatty() else 120)

SHORT = {"ndcg": "nDCG", "recall": "R", "mrr": "MRR", "precision": "P", "hit_rate": "Hit", "map": "MAP"}


def short(key: str) -> str:
    """``ndcg@10`` -> ``nDCG@10``, ``recall@100`` -> ``R@100``."""
    name, _, k = key.partition("@")
    return f"{SHORT.get(name, name)}@{k}"
