"""Two hand-made versions of a tiny corpus, shared by the lifecycle tests: v2 renames "Dash" to "Sprint" (same
text), edits Charge, deletes Shooting and moves faq.md to help/faq.md."""

from __future__ import annotations

from ragrig.retrieval.documents import Document

RULES_V1 = """# Core Rules

Intro text.

## Movement

### Dash

An operative moves up to three inches.

### Charge

Charge text here.

## Shooting

Shooting text.
"""
# v2: "Dash" renamed "Sprint" (same text), Charge edited, Shooting deleted; faq.md moved to help/faq.md
RULES_V2 = """# Core Rules

Intro text.

## Movement

### Sprint

An operative moves up to three inches.

### Charge

Charge text changed here.
"""
FAQ = "# FAQ\n\nAnswers about the rules.\n"


def doc(doc_id: str, text: str) -> Document:
    return Document(doc_id=doc_id, sha256="0" * 64, format="md", markdown=text)


V1 = {"core/rules.md": doc("core/rules.md", RULES_V1), "faq.md": doc("faq.md", FAQ)}
V2 = {"core/rules.md": doc("core/rules.md", RULES_V2), "help/faq.md": doc("help/faq.md", FAQ)}
