"""``link_context`` pairs: a corpus's own links as queries. A Markdown link to another section of the corpus
(``[Generic models](concepts/models.md#generic-models)``, ``[above](#strict-mode)``) sits in a sentence that says, in
another author's words and at another place, what the target section is for: anchor text and its context read like
queries (Craswell et al., SIGIR 2001; Xie et al., "Unsupervised Dense Retrieval Training with Web Anchors", SIGIR
2023). Each pair is that sentence (every link in it reduced to its text) -> the target section's body.

A target is resolved against the corpus, never fetched: a relative path (to the linking document's folder, or
``#anchor`` in the same document) that names an indexed document, and an anchor that is the slug of one of its
section titles (Python-Markdown's ``toc`` slugs, what MkDocs writes: lowercased, punctuation dropped, spaces and
dashes to one dash); no anchor: the document's first section. Links outside the corpus (``http:``, ``mailto:``),
reference-style links, anchors that name no section, and links into the linking section itself give no pair."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Sequence

from ragrig.retrieval.adapt.pairs import MIN_WORDS, Pair, body, first_pieces, section_key
from ragrig.retrieval.documents import Chunk
from ragrig.retrieval.markdown import strip_markup

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_SENTENCE = re.compile(r"[^\n.!?]+(?:[.!?]+|$)", re.M)
_MARK, _END = "\x00", "\x01"


def slug(title: str) -> str:
    """Python-Markdown's ``toc`` slug of a header title (MkDocs' anchors)."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def target_doc(doc_id: str, href: str) -> tuple[str, str] | None:
    """(document id, anchor) a relative link from ``doc_id`` points at; None for a link out of the corpus."""
    if _SCHEME.match(href) or href.startswith(("/", "//")):
        return None
    path, _, anchor = href.partition("#")
    path = path.split("?")[0]
    if not path:
        return doc_id, anchor
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(doc_id), path))
    return None if resolved.startswith("..") else (resolved, anchor)


def contexts(text: str) -> list[tuple[str, str]]:
    """(href, the sentence around the link with every link reduced to its text) for each inline link of
    ``text`` (a sentence runs on across the line breaks of its paragraph)."""
    out = []
    for m in _LINK.finditer(text):
        marked = text[: m.start()] + _MARK + m.group(1) + _END + text[m.end():]
        plain = _LINK.sub(lambda x: x.group(1), marked)
        at = plain.index(_MARK)
        start = plain.rfind("\n\n", 0, at) + 1
        end = plain.find("\n\n", at)
        para = plain[start : end if end >= 0 else len(plain)].replace("\n", " ")  # its paragraph, lines joined
        at -= start
        for s in _SENTENCE.finditer(para):
            if s.start() <= at < s.end():
                sentence = s.group().replace(_MARK, "").replace(_END, "")
                out.append((m.group(2), " ".join(sentence.split())))
                break
    return out


def link_context(chunks: Sequence[Chunk]) -> list[Pair]:
    """One pair per resolvable link, in chunk order: its sentence -> the target section's body (first piece)."""
    heads = first_pieces(chunks)
    firsts: dict[str, Chunk] = {}
    by_slug: dict[tuple[str, str], Chunk] = {}
    for c in heads:
        firsts.setdefault(c.doc_id, c)
        by_slug.setdefault((c.doc_id, slug(c.header_path[-1])), c)
    out = []
    for c in chunks:
        for href, sentence in contexts(c.text):  # as written: the search text has the links' markup stripped
            sentence = " ".join(strip_markup(sentence).split())
            where = target_doc(c.doc_id, href)
            if where is None:
                continue
            doc, anchor = where
            target = by_slug.get((doc, anchor)) if anchor else firsts.get(doc)
            if target is None or section_key(target) == section_key(c):
                continue
            positive = body(target)
            if len(sentence.split()) >= MIN_WORDS and len(positive.split()) >= MIN_WORDS:
                out.append(Pair("link_context", sentence, positive, section_key(target)))
    return out
