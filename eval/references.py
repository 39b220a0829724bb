"""Section references: which sections of a document a test set's ``section`` names. The one matching order.

A reference is a header's text or a header path (``Parent > Child``: a suffix of the section's path; a ``>`` that
closes an HTML tag such as ``<a name="x"></a>`` is text, not a separator). Evaluation (``eval.relevance``), the
stale-case check and the fingerprints it records (``eval.lifecycle.check``) and the drafts
(``eval.lifecycle.drafts``) all resolve and write references through ``resolve`` and ``name_section`` here.

The candidates are the sections whose header path ends with the reference in the normalised form
(``markdown.normalize_header``: markup, attribute lists and case dropped). Of them, the first of these tests
that keeps any decides, strictest first:

1. **exact**: every part as written: the header's text after its ``#``s, attribute list, markup and case included
   (runs of spaces, spaces inside ``{ }`` and backslash escapes aside: docling writes ``_1`` as ``\\_1``); a part
   written without an attribute list (or anchor) is compared with the header's text without its own;
2. **path**: the last part as written, the parent headers it names in the normalised form;
3. **plain**: the last part's plain text with its case (``clean_title``), its parents normalised (not when the
   part and the header both carry an anchor: two different anchors name two different sections);
4. **normalised**: every candidate.

Each test keeps a subset of the next, so a reference that named one section in the normalised form names that
same section; more than one section at the deciding test is ambiguous (``problem`` says which they are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragrig.retrieval.markdown import Section, clean_title, normalize_header, sections

EXACT, PATH, PLAIN, NORMALISED = "exact", "path", "plain", "normalised"
_PART = re.compile(r"<[A-Za-z/!][^<>\n]*>|>")  # an HTML tag (kept) or a path separator
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_ATTR_LIST = re.compile(r"\{[ \t]*([:#.][^{}\n]*?)[ \t]*\}")
_ANCHORS = re.compile(r"\{[ \t]*[:#.][^{}\n]*\}|\[\]\([^)\n]*\)|<a\s[^<>\n]*>\s*</a>")  # {#id}, [](){#id}, <a name>
_norm = lru_cache(maxsize=1 << 16)(normalize_header)
_plain = lru_cache(maxsize=1 << 16)(clean_title)
_sections = lru_cache(maxsize=256)(sections)  # a document's sections, parsed once for all its references


def split_reference(reference: str) -> list[str]:
    """The parts of a reference, outermost first (empty parts dropped)."""
    parts, pos = [], 0
    for m in _PART.finditer(reference):
        if m.group() == ">":
            parts.append(reference[pos : m.start()])
            pos = m.end()
    parts.append(reference[pos:])
    return [p.strip() for p in parts if p.strip()]


@lru_cache(maxsize=1 << 16)
def written_form(text: str) -> str:
    """A header's text as written, for comparison: escapes resolved, ``{ #a }`` as ``{#a}``, spaces collapsed."""
    text = _ATTR_LIST.sub(lambda m: "{" + " ".join(m.group(1).split()) + "}", _ESCAPE.sub(r"\1", text))
    return " ".join(text.split())


@lru_cache(maxsize=1 << 16)
def _bare(text: str) -> str:
    return " ".join(_ANCHORS.sub(" ", written_form(text)).split())


def _as_written(part: str, header: str) -> bool:
    return written_form(part) in (written_form(header), _bare(header))


def _same_plain(part: str, header: str, title: str) -> bool:
    """The plain text with its case, unless both carry an anchor (then they differ: ``_as_written`` failed)."""
    anchored = _bare(part) != written_form(part) and _bare(header) != written_form(header)
    return not anchored and _plain(part) == title


@dataclass(frozen=True)
class Resolution:
    """What a reference names in one document: the sections kept by the deciding test (``tier``; "" when no
    header matches) and how many the normalised form alone names (``loose``)."""

    reference: str
    parts: tuple[str, ...]
    tier: str
    sections: tuple[Section, ...]
    loose: int


def resolve(markdown: str, reference: str) -> Resolution:
    """The sections of ``markdown`` that ``reference`` names, by the first test above that keeps any."""
    parts = tuple(split_reference(reference))
    k = len(parts)
    want = [_norm(p) for p in parts]
    every = _sections(markdown)
    found = [s for s in every if k and len(s.path) >= k and [_norm(t) for t in s.path[-k:]] == want]
    if not found:
        return Resolution(reference, parts, "", (), 0)
    leaf = parts[-1]
    tests = ((EXACT, lambda s: all(map(_as_written, parts, (s.written or s.path)[-k:]))),
             (PATH, lambda s: _as_written(leaf, (s.written or s.path)[-1])),
             (PLAIN, lambda s: _same_plain(leaf, (s.written or s.path)[-1], s.path[-1])))
    for tier, test in tests:
        kept = tuple(s for s in found if test(s))
        if kept:
            return Resolution(reference, parts, tier, kept, len(found))
    return Resolution(reference, parts, NORMALISED, tuple(found), len(found))


def one_line(text: str) -> str:
    """A user's text on one line of an error message (line breaks and tabs shown as escapes)."""
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def where(doc_id: str, s: Section) -> str:
    """A section as ``doc#Outer > … > Header``, each header as written (so anchors tell duplicates apart)."""
    return f"{doc_id}#{' > '.join(written_form(t) for t in (s.written or s.path))}"


def problem(res: Resolution, doc_id: str) -> str | None:
    """Why ``res`` does not name exactly one section (the error text, without the case), or None when it does."""
    ref = one_line(res.reference)
    if not res.parts:
        return "empty section"
    if not res.sections:
        return f"section '{ref}' matches no header in '{doc_id}'"
    if len(res.sections) == 1:
        return None
    n = len(res.sections)
    shown = "; ".join(where(doc_id, s) for s in res.sections[:5]) + (f"; and {n - 5} more" if n > 5 else "")
    how = "" if res.tier == EXACT else "write the header as it stands there (its case, its attribute list) or "
    return f"section '{ref}' matches {n} headers in '{doc_id}' ({shown}); {how}use a longer header-path suffix"


def reference_key(doc_id: str, reference: str, res: Resolution | None = None) -> str:
    """A target's key: ``doc#normalised > header > path``; the reference as written instead when its normalised
    form names several sections of the document and the written one names one (``res``), so two such targets of
    one case stay two."""
    parts = split_reference(reference)
    if res is not None and len(res.sections) == 1 and res.loose > 1:
        return f"{doc_id}#{' > '.join(written_form(p) for p in parts)}"
    return f"{doc_id}#{' > '.join(_norm(p) for p in parts)}"


def name_section(markdown: str, start: int, written: str | None = None) -> str | None:
    """How to name the section whose header starts at ``start``: ``written`` when it names exactly that section,
    else its header-path suffix as long as ``written`` (or the nearest length) that names it alone, in plain
    text or, where no plain suffix is unambiguous, as written (attribute lists kept). None: nothing names it alone."""
    secs = _sections(markdown)
    mine = next((s for s in secs if s.start == start), None)
    if mine is None:
        return None

    def names(ref: str) -> bool:
        got = resolve(markdown, ref).sections
        return len(got) == 1 and got[0].start == start

    if written and names(written):
        return written
    hint = min(len(mine.path), max(1, len(split_reference(written or ""))))
    lengths = [*range(hint, len(mine.path) + 1), *range(hint - 1, 0, -1)]
    as_written = tuple(written_form(t) for t in (mine.written or mine.path))
    # plain text first at every length: anchors such as mkdocs' "_1" are renumbered when a header is added
    for ref in [" > ".join(mine.path[-n:]) for n in lengths] + [" > ".join(as_written[-n:]) for n in lengths]:
        if names(ref):
            return ref
    return None
