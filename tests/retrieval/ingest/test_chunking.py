"""Header-level chunking: exact spans, header paths, and the token ceiling (hand-computed with whitespace tokens)."""

from __future__ import annotations

import pytest
from ragrig.retrieval.documents import Chunk, Document, sha256_text
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document, make_search_text, whitespace_counter


def doc(markdown: str, doc_id: str = "d.md", **metadata) -> Document:
    return Document(doc_id=doc_id, sha256="0" * 64, format="md", markdown=markdown, metadata=dict(metadata))


def chunk(markdown: str, level: int = 3, max_tokens: int = 1000, drop_empty: bool = True, count=whitespace_counter,
          **meta):
    d = doc(markdown, **meta)
    chunks = chunk_document(d, ChunkingParams(level, max_tokens, drop_empty), count)
    check_invariants(d, chunks, max_tokens, count)
    return chunks


def check_invariants(d: Document, chunks: list[Chunk], max_tokens: int, count) -> None:
    """What must hold for every chunking: exact spans, order, no overlap, ids, the ceiling, hashes."""
    for i, c in enumerate(chunks):
        assert d.markdown[c.start : c.end] == c.text
        assert c.chunk_id == f"{d.doc_id}#{i}"
        assert c.doc_id == d.doc_id
        assert c.text == c.text.strip() and c.text
        assert c.tokens == count([c.search_text])[0]
        assert c.tokens <= max_tokens, (c.chunk_id, c.tokens)
        assert c.sha256 == sha256_text(c.search_text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.end <= b.start, (a.chunk_id, b.chunk_id)


def words(text: str) -> list[str]:
    return text.split()


# ---- structure -----------------------------------------------------------------


def test_fenced_hashes_do_not_split():
    md = (
        "# Roster\n"
        "\n"
        "Example:\n"
        "\n"
        "```text\n"
        "# Team name\n"
        "## Operatives\n"
        "```\n"
        "\n"
        "~~~\n"
        "### Also code\n"
        "~~~\n"
        "\n"
        "## Limits\n"
        "\n"
        "At most 10.\n"
    )
    chunks = chunk(md)
    assert [(c.header_path, c.level) for c in chunks] == [(["Roster"], 1), (["Roster", "Limits"], 2)]
    assert chunks[0].text == md[: md.index("~~~\n\n## Limits") + 3]
    assert "# Team name" in chunks[0].text and "### Also code" in chunks[0].text
    assert chunks[1].text == "## Limits\n\nAt most 10."
    assert chunks[1].search_text == "Roster > Limits\nAt most 10."


COMBAT = (
    "# Combat\n"
    "\n"
    "Overview of combat.\n"
    "\n"
    "## Grappling\n"
    "\n"
    "Grab an enemy.\n"
    "\n"
    "### Escaping a Grapple\n"
    "\n"
    "Roll off.\n"
    "\n"
    "#### Breaking Free\n"
    "\n"
    "On a 6 you escape.\n"
)


def test_header_paths_and_levels_at_level_3():
    chunks = chunk(COMBAT, level=3)
    assert [(c.chunk_id, c.header_path, c.level) for c in chunks] == [
        ("d.md#0", ["Combat"], 1),
        ("d.md#1", ["Combat", "Grappling"], 2),
        ("d.md#2", ["Combat", "Grappling", "Escaping a Grapple"], 3),
    ]
    # the #### section stays inside the level-3 chunk
    assert chunks[2].text == "### Escaping a Grapple\n\nRoll off.\n\n#### Breaking Free\n\nOn a 6 you escape."
    assert chunks[2].search_text == (
        "Combat > Grappling > Escaping a Grapple\nRoll off.\n\n#### Breaking Free\n\nOn a 6 you escape."
    )
    assert chunks[0].text == "# Combat\n\nOverview of combat."
    assert chunks[0].search_text == "Combat\nOverview of combat."
    # whitespace tokens: "Combat > Grappling > Escaping a Grapple" (7) + "Roll off." (2) + "#### Breaking Free" (3) + 5
    assert chunks[2].tokens == 17
    assert [c.part for c in chunks] == [0, 0, 0]
    assert chunks[1].header == "Combat > Grappling"


def test_level_4_splits_at_four_hashes():
    chunks = chunk(COMBAT, level=4)
    assert [(c.header_path, c.level) for c in chunks][-2:] == [
        (["Combat", "Grappling", "Escaping a Grapple"], 3),
        (["Combat", "Grappling", "Escaping a Grapple", "Breaking Free"], 4),
    ]
    assert len(chunks) == 4
    assert chunks[2].text == "### Escaping a Grapple\n\nRoll off."
    assert chunks[3].text == "#### Breaking Free\n\nOn a 6 you escape."
    assert chunks[3].tokens == len("Combat > Grappling > Escaping a Grapple > Breaking Free".split()) + 5


def test_level_2_keeps_deeper_headers_inside():
    chunks = chunk(COMBAT, level=2)
    assert [c.header_path for c in chunks] == [["Combat"], ["Combat", "Grappling"]]
    assert chunks[1].text == COMBAT[COMBAT.index("## Grappling") :].rstrip()


def test_header_path_pops_to_the_right_parent():
    md = "# A\n\na\n\n### A3\n\nx\n\n## B\n\nb\n\n# C\n\nc\n"
    chunks = chunk(md)
    assert [(c.header_path, c.level) for c in chunks] == [
        (["A"], 1),
        (["A", "A3"], 3),
        (["A", "B"], 2),
        (["C"], 1),
    ]


def test_no_headers_is_one_whole_chunk():
    md = "\n\nJust some notes.\n\nA second paragraph.\n\n"
    chunks = chunk(md)
    assert len(chunks) == 1
    c = chunks[0]
    assert (c.level, c.header_path, c.part) == (0, [], 0)
    assert c.text == "Just some notes.\n\nA second paragraph."
    assert (c.start, c.end) == (2, len(md) - 2)
    assert c.search_text == c.text
    # with a document title, the title is the header path of header-less text
    titled = chunk(md, title="Field Notes")
    assert titled[0].header_path == ["Field Notes"]
    assert titled[0].search_text == "Field Notes\nJust some notes.\n\nA second paragraph."


def test_text_before_first_header_is_level_0():
    chunks = chunk("Preamble line.\n\n# A\n\nbody\n")
    assert [(c.level, c.header_path, c.text) for c in chunks] == [(0, [], "Preamble line."), (1, ["A"], "# A\n\nbody")]


def test_frontmatter_is_metadata_never_text():
    md = "---\ntitle: Combat Rules\ntags: [melee, core]\n---\n# Combat\n\nFight text here.\n"
    chunks = chunk(md, format="md")
    assert len(chunks) == 1
    c = chunks[0]
    assert c.start == md.index("# Combat")
    assert "title:" not in c.text and "title:" not in c.search_text
    assert c.metadata == {"title": "Combat Rules", "tags": ["melee", "core"], "format": "md"}


def test_frontmatter_only_preamble_makes_no_chunk():
    md = "---\ntitle: T\n---\n\n# A\n\ntext\n"
    assert [c.text for c in chunk(md)] == ["# A\n\ntext"]


@pytest.mark.parametrize(
    "md",
    [
        "---\ntitle: [unclosed\n---\n# A\n\ntext\n",
        "---\n- just\n- a list\n---\n# A\n\ntext\n",
        "---\na: b: c\n---\n# A\n\ntext\n",
    ],
)
def test_malformed_frontmatter_does_not_crash_and_is_skipped(md):
    chunks = chunk(md)
    assert [(c.header_path, c.text) for c in chunks] == [(["A"], "# A\n\ntext")]
    assert chunks[0].metadata == {}


def test_empty_section_is_dropped():
    md = "# A\n## B\n\nbody of b\n"
    chunks = chunk(md)
    assert [(c.chunk_id, c.header_path, c.level, c.text) for c in chunks] == [
        ("d.md#0", ["A", "B"], 2, "## B\n\nbody of b")
    ]
    # a header with nothing under it at the very end is dropped too
    assert len(chunk("# A\n\ntext\n\n## Empty\n\n")) == 1


def test_empty_section_kept_when_asked():
    md = "# A\n## B\n\nbody of b\n"
    chunks = chunk(md, drop_empty=False)
    assert [(c.header_path, c.text, c.search_text) for c in chunks] == [
        (["A"], "# A", "A"),
        (["A", "B"], "## B\n\nbody of b", "A > B\nbody of b"),
    ]


def test_make_search_text():
    assert make_search_text(["A", "B"], "  body \n") == "A > B\nbody"
    assert make_search_text([], "body") == "body"
    assert make_search_text(["A"], "   ") == "A"


# ---- the token ceiling ------------------------------------------------------------------


def para(tag: str, n: int) -> str:
    """n whitespace tokens, no sentence punctuation: 'tag1 tag2 ... tagn'."""
    return " ".join(f"{tag}{i}" for i in range(1, n + 1))


def test_huge_section_splits_at_paragraphs():
    # prefix "Big" = 1 token + 1 for the joiner -> 18 tokens of body per piece at max_tokens=20
    p1, p2, p3, p4 = para("a", 8), para("b", 8), para("c", 8), para("d", 5)
    md = f"# Big\n\n{p1}\n\n{p2}\n\n{p3}\n\n{p4}\n"
    chunks = chunk(md, max_tokens=20)
    assert [c.text for c in chunks] == [f"# Big\n\n{p1}\n\n{p2}", f"{p3}\n\n{p4}"]
    assert [c.search_text for c in chunks] == [f"Big\n{p1}\n\n{p2}", f"Big\n{p3}\n\n{p4}"]
    assert [c.tokens for c in chunks] == [17, 14]
    assert [(c.part, c.level, c.header_path) for c in chunks] == [(1, 1, ["Big"]), (2, 1, ["Big"])]
    assert [c.chunk_id for c in chunks] == ["d.md#0", "d.md#1"]


def test_paragraph_pieces_never_split_mid_fence():
    code = "```\nline one\n\nline two\n```"
    md = f"# F\n\n{para('a', 10)}\n\n{code}\n\n{para('b', 10)}\n"
    chunks = chunk(md, max_tokens=16)
    assert [c.text for c in chunks] == [f"# F\n\n{para('a', 10)}", code, para("b", 10)]


def test_single_giant_paragraph_splits_at_sentences():
    s1 = "One two three four five six."
    s2 = "Seven eight nine ten eleven twelve."
    s3 = "Thirteen fourteen fifteen sixteen seventeen eighteen."
    md = f"# H\n\n{s1} {s2} {s3}\n"
    chunks = chunk(md, max_tokens=16)  # body budget 16 - 2 = 14: two 6-word sentences fit, three do not
    assert [c.text for c in chunks] == [f"# H\n\n{s1} {s2}", s3]
    assert [c.tokens for c in chunks] == [13, 7]


def test_overlong_sentence_falls_back_to_words():
    s1 = "Short one here."
    s2 = para("w", 20) + "."
    s3 = "Tail end."
    md = f"# H\n\n{s1} {s2} {s3}\n"
    chunks = chunk(md, max_tokens=16)
    w = para("w", 20).split()
    assert [c.text for c in chunks] == [
        f"# H\n\n{s1}",
        " ".join(w[:14]),
        " ".join(w[14:]) + ".",
        s3,
    ]
    assert [c.tokens for c in chunks] == [4, 15, 7, 3]
    assert [c.part for c in chunks] == [1, 2, 3, 4]


def test_paragraph_without_punctuation_splits_at_words():
    md = f"# H\n\n{para('x', 30)}\n"
    chunks = chunk(md, max_tokens=16)
    x = para("x", 30).split()
    assert [c.text for c in chunks] == ["# H\n\n" + " ".join(x[:14]), " ".join(x[14:28]), " ".join(x[28:])]
    assert [c.tokens for c in chunks] == [15, 15, 3]


def test_lines_are_a_split_level_between_paragraphs_and_sentences():
    md = "# H\n\n" + "\n".join(para(t, 6) for t in "abc") + "\n"
    chunks = chunk(md, max_tokens=16)
    assert [c.text for c in chunks] == ["# H\n\n" + para("a", 6) + "\n" + para("b", 6), para("c", 6)]


def char_counter(texts):
    """One token per non-whitespace character: lets a single word exceed the window."""
    return [sum(len(w) for w in t.split()) for t in texts]


def test_word_longer_than_window_is_cut_by_characters():
    md = "# H\n\n" + "x" * 50 + "\n"
    chunks = chunk(md, max_tokens=20, count=char_counter)
    # prefix "H" = 1 + 1 joiner -> 18 characters of body per piece
    assert [len(c.text) for c in chunks] == [len("# H\n\n") + 18, 18, 14]
    assert [c.tokens for c in chunks] == [19, 19, 15]
    assert "".join(c.text for c in chunks) == md.strip()
    assert all(c.header_path == ["H"] for c in chunks)


def joins_cost_three(texts):
    """Whitespace tokens, plus 3 per paragraph break: joined paragraphs count more than parts + 1 per join."""
    return [len(t.split()) + 3 * t.count("\n\n") for t in texts]


def test_packing_rechecks_joined_spans_for_tokenizers_that_count_joins():
    # body budget 20 - 2 = 18; paragraphs of 5: the estimate (5 + 1 + 5 + 1 + 5 = 17) packs three,
    # but joined they count 15 + 2 * 3 = 21 > 18, so from there each span grows only while it fits: two per piece
    paras = [para(t, 5) for t in "abcd"]
    md = "# H\n\n" + "\n\n".join(paras) + "\n"
    chunks = chunk(md, max_tokens=20, count=joins_cost_three)  # check_invariants: every piece <= 20
    assert [c.text for c in chunks] == ["# H\n\n" + "\n\n".join(paras[:2]), "\n\n".join(paras[2:])]
    assert [c.tokens for c in chunks] == [14, 14]  # "H" + 10 words + 3 for the break


def test_a_section_that_fits_is_not_split():
    md = f"# H\n\n{para('a', 7)}\n\n{para('b', 7)}\n"
    chunks = chunk(md, max_tokens=16)  # 1 + 14 = 15 <= 16
    assert len(chunks) == 1 and chunks[0].part == 0 and chunks[0].tokens == 15


@pytest.mark.parametrize("max_tokens", [16, 23, 40, 101])
@pytest.mark.parametrize("level", [2, 3, 4])
def test_invariants_on_a_mixed_document(max_tokens, level):
    body = "\n\n".join(
        [
            "Intro " + " ".join(f"sentence {i} ends here." for i in range(12)),
            "```\n# code\n\n## more code\n```",
            para("long", 45),
            "- item one\n- item two\n- item three",
        ]
    )
    md = (
        "---\ntitle: Mixed\n---\n"
        f"Preamble {para('p', 20)}\n\n"
        f"# One\n\n{body}\n\n"
        f"## Two\n### Three\n\n{body}\n\n"
        f"#### Four\n\n{body}\n\n"
        "## Empty\n\n"
        f"# Five\n\n{'y' * 30} {para('z', 3)}\n"
    )
    d = doc(md, title="Mixed")
    chunks = chunk_document(d, ChunkingParams(level, max_tokens, True), whitespace_counter)
    check_invariants(d, chunks, max_tokens, whitespace_counter)
    # every word of the body is in exactly one chunk, except header lines of dropped empty sections
    # ("## Empty" always; "## Two" only when "### Three" is a split point, i.e. at level >= 3)
    kept = md[md.index("Preamble") :].replace("## Empty\n", "")
    if level >= 3:
        kept = kept.replace("## Two\n", "")
    assert [w for c in chunks for w in c.text.split()] == kept.split()
    # the fenced code block's hashes never became headers
    assert not any(c.header_path and c.header_path[-1] in ("code", "more code") for c in chunks)


@pytest.mark.slow
def test_real_tokenizer_never_exceeds_the_window(embedder):
    sentences = " ".join(
        f"Operative {i} may perform the Charge action, moving up to 6\" plus 2\" toward an enemy within range;"
        for i in range(60)
    )
    no_punct = " ".join(f"tokenisation{i}of{i}weird{i}words" for i in range(300))
    url = "https://example.com/" + "/".join(f"segment{i}" for i in range(200))
    md = (
        "# Rules\n\n## Fighting\n\n### Resolving Strikes and Parries\n\n"
        + "\n\n".join([sentences, no_punct, url, "Short closing paragraph."])
        + "\n"
    )
    window = embedder.window
    d = doc(md)
    chunks = chunk_document(d, ChunkingParams(3, window, True), embedder.count_tokens)
    check_invariants(d, chunks, window, embedder.count_tokens)
    assert len(chunks) > 3
    assert sum(1 for c in chunks if c.tokens > window) == 0
    assert all(c.header_path == ["Rules", "Fighting", "Resolving Strikes and Parries"] for c in chunks)
    # everything is covered once (the URL is one "word" longer than the window, so it is cut mid-word)
    squeeze = "".join
    assert squeeze(squeeze(c.text.split()) for c in chunks) == squeeze(md[md.index("### Resolving") :].split())
    url_pieces = [c for c in chunks if "segment1" in c.text]
    assert len(url_pieces) >= 2


def test_title_path_heads_a_document_without_an_h1_with_its_title():
    from ragrig.retrieval.ingest.chunking import document_title

    md = "Intro before any header.\n\n## Generating\n\nHow to generate.\n\n### Options\n\nThe options.\n"
    params = ChunkingParams(max_header_level=3, max_tokens=1000, title_path=True)
    got = chunk_document(doc(md, "concepts/json_schema.md"), params)
    assert [c.header_path for c in got] == [["Json schema"], ["Json schema", "Generating"],
                                            ["Json schema", "Generating", "Options"]]
    assert [c.level for c in got] == [0, 2, 3]
    assert got[1].search_text.startswith("Json schema > Generating\n")
    assert all(md[c.start:c.end] == c.text for c in got)  # offsets unchanged
    # a frontmatter/metadata title wins over the file name; a document with an H1 keeps its own paths
    assert chunk_document(doc(md, "x.md", title="JSON Schema"), params)[1].header_path == ["JSON Schema", "Generating"]
    with_h1 = chunk_document(doc("# Guide\n\n## Part\n\nText.\n", "g.md"), params)
    assert [c.header_path for c in with_h1] == [["Guide", "Part"]]
    # off (the default): paths as before
    off = chunk_document(doc(md, "concepts/json_schema.md"), ChunkingParams(max_header_level=3, max_tokens=1000))
    assert [c.header_path for c in off] == [[], ["Generating"], ["Generating", "Options"]]
    assert document_title(doc("", "a/b/why-use_it.md")) == "Why use it"
