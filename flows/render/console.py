"""The one rich console, and short metric labels for narrow table columns.

The console never parses markup or emoji codes: everything printed here can come from a user's files, queries,
test sets or configs (a header ``## Closing [/bold] tag rules``, a test set named ``rich[/x]``, a model id
``m [torch; sha256:…]``, a ``[link=…]`` in a document), and all of it is text. A renderer that wants colour
passes ``rich.text.Text`` objects built with ``styled``/``line`` (the style is an argument, never parsed out of
a string), so no renderer has to remember to escape anything."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.text import Text

# C0 and C1 control characters and DEL, shown as \x1b rather than obeyed: a corpus file's header, a path or a query
# with an escape sequence must not recolour, retitle or clear the user's terminal (newline and tab are layout)
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c not in (0x09, 0x0A)}


def visible(text: object) -> str:
    """``text`` with every control character written out (``\\x1b``), for anything printed that a user's input,
    files or a server's answer can reach."""
    return str(text).translate(_CONTROLS)


def say(*parts: object, **kwargs: Any) -> None:
    """``print`` for the renderers' plain lines: each part through ``visible``."""
    print(*(visible(p) for p in parts), **kwargs)


class _Console(Console):
    """Every string rich renders (table cells, titles) passes ``visible`` first."""

    def render_str(self, text: str, **kwargs: object) -> Text:  # type: ignore[override]
        return super().render_str(visible(text), **kwargs)  # type: ignore[arg-type]


# a terminal gets its own width; a pipe or a CI log gets 120 columns, so numbers are never cut off
console = _Console(stderr=False, highlight=False, markup=False, emoji=False,
                   width=None if sys.stdout.isatty() else 120)

SHORT = {"ndcg": "nDCG", "recall": "R", "mrr": "MRR", "precision": "P", "hit_rate": "Hit", "map": "MAP"}


def short(key: str) -> str:
    """``ndcg@10`` -> ``nDCG@10``, ``recall@100`` -> ``R@100``."""
    name, _, k = key.partition("@")
    return f"{SHORT.get(name, name)}@{k}"


def styled(text: object, style: str = "") -> Text:
    """``text`` as literal text in ``style`` (an empty style: plain)."""
    return Text(visible(text), style=style)


def line(*parts: object) -> Text:
    """One line from parts: a ``(text, style)`` pair is styled, anything else is literal text."""
    out = Text()
    for p in parts:
        if isinstance(p, tuple):
            out.append(visible(p[0]), style=p[1])
        elif isinstance(p, Text):
            out.append_text(p)
        else:
            out.append(visible(p))
    return out
