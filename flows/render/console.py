"""The one rich console, and short metric labels for narrow table columns.

The console never parses markup or emoji codes: everything printed here can come from a user's files, queries,
test sets or configs (a header ``## Closing [/bold] tag rules``, a test set named ``rich[/x]``, a model id
``m [torch; sha256:…]``, a ``[link=…]`` in a document), and all of it is text. A renderer that wants colour
passes ``rich.text.Text`` objects built with ``styled``/``line`` (the style is an argument, never parsed out of
a string), so no renderer has to remember to escape anything."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

# a terminal gets its own width; a pipe or a CI log gets 120 columns, so numbers are never cut off
console = Console(stderr=False, highlight=False, markup=False, emoji=False,
                  width=None if sys.stdout.isatty() else 120)

SHORT = {"ndcg": "nDCG", "recall": "R", "mrr": "MRR", "precision": "P", "hit_rate": "Hit", "map": "MAP"}


def short(key: str) -> str:
    """``ndcg@10`` -> ``nDCG@10``, ``recall@100`` -> ``R@100``."""
    name, _, k = key.partition("@")
    return f"{SHORT.get(name, name)}@{k}"


def styled(text: object, style: str = "") -> Text:
    """``text`` as literal text in ``style`` (an empty style: plain)."""
    return Text(str(text), style=style)


def line(*parts: object) -> Text:
    """One line from parts: a ``(text, style)`` pair is styled, anything else is literal text."""
    out = Text()
    for p in parts:
        if isinstance(p, tuple):
            out.append(str(p[0]), style=p[1])
        elif isinstance(p, Text):
            out.append_text(p)
        else:
            out.append(str(p))
    return out
