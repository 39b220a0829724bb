"""Markdown structure: ATX headers outside code fences, frontmatter, section spans."""

from __future__ import annotations

from ragrig.retrieval.markdown import (
    clean_title,
    iter_lines,
    normalize_header,
    parse_headers,
    sections,
    split_frontmatter,
    strip_markup,
)

FENCED = (
    "# Title\n"
    "\n"
    "Intro.\n"
    "\n"
    "```\n"
    "# not a header\n"
    "## also not\n"
    "```\n"
    "\n"
    "~~~python\n"
    "### nope\n"
    "```\n"
    "#### still code: a backtick fence does not close a tilde fence\n"
    "~~~\n"
    "\n"
    "````\n"
    "```\n"
    "# inside a four-backtick fence\n"
    "````\n"
    "\n"
    "## Real\n"
    "\n"
    "Body.\n"
)


def test_headers_inside_fences_are_not_headers():
    hs = parse_headers(FENCED)
    assert [(h.level, h.title) for h in hs] == [(1, "Title"), (2, "Real")]
    real = hs[1]
    assert real.start == FENCED.index("## Real")
    assert real.body_start == FENCED.index("## Real") + len("## Real\n")
    assert hs[0].start == 0 and hs[0].body_start == len("# Title\n")


def test_atx_header_forms():
    text = (
        "#NoSpace is not a header\n"
        "    # four spaces of indent is code, not a header\n"
        "   ### Three Spaces ###\n"
        "## **Bold** and _it_ \\#1 ##\n"
        "####### seven hashes is not a header\n"
        "###### Six\n"
    )
    hs = parse_headers(text)
    assert [(h.level, h.title) for h in hs] == [(3, "Three Spaces"), (2, "Bold and it #1"), (6, "Six")]


def test_parse_headers_from_offset():
    text = "# A\n\n# B\n"
    assert [h.title for h in parse_headers(text, start=4)] == ["B"]


def test_clean_and_normalize_title():
    assert clean_title("  **Lethal**   *x+*  ") == "Lethal x+"
    assert clean_title("`code` and \\[brackets\\] \\#2") == "code and [brackets] #2"
    assert normalize_header("## Escaping   a **Grapple**") == "escaping a grapple"


def test_titles_lose_markup_attribute_lists_and_inline_html_but_keep_identifiers():
    assert clean_title("Rebuilding a `TypeAdapter`'s schema") == "Rebuilding a TypeAdapter's schema"
    assert clean_title("Why use Pydantic? {#why-use-pydantic}") == "Why use Pydantic?"
    assert clean_title("Strict mode {: .class-name }") == "Strict mode"
    assert clean_title('<a name="json"></a>JSON [Schema](schema.md) generation') == "JSON Schema generation"
    assert clean_title("`model_validator` and __dunder__ and _emphasis_") == "model_validator and dunder and emphasis"
    assert clean_title("use field_validator_mode") == "use field_validator_mode"  # snake_case is not emphasis


def test_one_header_written_two_ways_normalises_to_one_form():
    source = "## Rebuilding a `TypeAdapter`'s schema {#rebuild}"
    rewritten = "## Rebuilding a `TypeAdapter` 's schema"  # what docling writes back
    assert normalize_header(source) == normalize_header(rewritten) == "rebuilding a typeadapter s schema"
    assert normalize_header("**Fields** *with* `alias`") == normalize_header("Fields with alias")
    assert normalize_header("Lethal x+") != normalize_header("Lethal y+")


def test_strip_markup_keeps_words_and_code():
    text = ('See [the docs](https://x.y/z) and ![a diagram](d.png).<!-- hidden -->\n[](){#anchor}'
            '<a name="x"></a>Use `model_dump()` {: .note }\n```py\nx = {"a": 1}\n```')
    assert strip_markup(text) == 'See the docs and a diagram.\nUse `model_dump()`\n```py\nx = {"a": 1}\n```'


def test_headers_skip_the_frontmatter_by_default():
    text = "---\ntitle: T\n# a YAML comment\n---\n# Real\n\nBody.\n"
    assert [h.title for h in parse_headers(text)] == ["Real"]
    assert [s.path for s in sections(text)] == [("Real",)]


def test_iter_lines_offsets():
    text = "ab\r\ncd\nlast"
    assert list(iter_lines(text)) == [(0, "ab", 4), (4, "cd", 7), (7, "last", 11)]


def test_frontmatter_parsed():
    text = "---\ntitle: Combat\ntags: [a, b]\n---\n# Combat\n"
    meta, body, err = split_frontmatter(text)
    assert meta == {"title": "Combat", "tags": ["a", "b"]}
    assert err is None
    assert text[body:] == "# Combat\n"


def test_frontmatter_dots_close_and_crlf():
    text = "---\r\ntitle: X\r\n...\r\nbody\r\n"
    meta, body, err = split_frontmatter(text)
    assert meta == {"title": "X"} and err is None
    assert text[body:] == "body\r\n"


def test_no_frontmatter():
    assert split_frontmatter("# A\n---\nx: 1\n---\n") == ({}, 0, None)
    # an opening line without a closing one is not frontmatter
    assert split_frontmatter("---\ntitle: x\n# A\n") == ({}, 0, None)


def test_malformed_frontmatter_is_reported_and_skipped():
    text = "---\ntitle: [unclosed\n---\n# A\n"
    meta, body, err = split_frontmatter(text)
    assert meta == {}
    assert text[body:] == "# A\n"
    assert err is not None and err.startswith("frontmatter is not valid YAML")


def test_frontmatter_that_is_not_a_mapping():
    text = "---\n- a\n- b\n---\nbody\n"
    meta, body, err = split_frontmatter(text)
    assert meta == {} and text[body:] == "body\n"
    assert err == "frontmatter is not a mapping (got list)"


def test_sections_spans_and_paths():
    text = "# A\n\na\n\n## B\n\nb\n\n### C\n\nc\n\n## D\n\nd\n"
    secs = sections(text)
    got = [(s.path, text[s.start : s.end]) for s in secs]
    assert got == [
        (("A",), text),
        (("A", "B"), "## B\n\nb\n\n### C\n\nc\n\n"),
        (("A", "B", "C"), "### C\n\nc\n\n"),
        (("A", "D"), "## D\n\nd\n"),
    ]
    # max_level hides deeper headers: B then runs to D
    assert [s.path for s in sections(text, max_level=2)] == [("A",), ("A", "B"), ("A", "D")]


def test_normalize_header_without_markup_skips_the_patterns_and_gives_what_they_give():
    """The fast path (no character any of ``clean_title``'s patterns needs) against the full one, on random titles
    drawn from words, spaces, punctuation, markup characters, casefolding letters and '#'s."""
    import random

    from ragrig.retrieval.markdown import _MARKUP, _WORD, clean_title, normalize_header

    alphabet = list("ab Zß İ\t\u00a0#-.'’:()!|~+") + ["Model", "x1", "<b>", "</b>", "{#id}", "[t](u)", "**", "_",
                                                    "`", "\\", "[]()", "<!-- c -->", "*"]
    rng = random.Random(0)
    plain = 0
    for _ in range(5000):
        title = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        full = " ".join(_WORD.findall(clean_title(title.lstrip("#")).casefold()))
        assert normalize_header(title) == full, title
        plain += _MARKUP.isdisjoint(title)
    assert plain > 500  # the fast path was taken often enough to be tested
