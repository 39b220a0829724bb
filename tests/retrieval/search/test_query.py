"""Query processing: validation, comparison detection, keyword normalisation, synonym expansion, synonym files."""

from __future__ import annotations

import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.search.query import QueryProcessor, detect_comparison, load_synonyms, validate_query

LIBRARY = {
    "terms": [
        {"term": "Accurate", "kind": "parameterized"},
        {"term": "Lethal", "kind": "parameterized"},
        {"term": "Shield Wall", "kind": "phrase"},
    ]
}


# ---- validate_query ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q", ["", "   ", "\t\n \r\n"])
def test_empty_queries_are_rejected(q):
    with pytest.raises(InputError, match="empty"):
        validate_query(q)


def test_length_limit_applies_after_whitespace_collapse():
    assert validate_query("x" * 20, max_chars=20) == "x" * 20
    with pytest.raises(InputError) as exc:
        validate_query("x" * 21, max_chars=20)
    assert "21 characters" in str(exc.value) and "max_query_chars=20" in str(exc.value)
    # 10 words separated by runs of spaces collapse to 19 characters: within a 19-character limit
    assert validate_query("a     " * 10, max_chars=19) == " ".join(["a"] * 10)


@pytest.mark.parametrize("ch, code", [("\x07", "U+0007"), ("\x00", "U+0000"), ("\x1b", "U+001B"), ("\u200b", "U+200B")])
def test_control_characters_are_rejected_with_the_code_point(ch, code):
    with pytest.raises(InputError) as exc:
        validate_query(f"ab{ch}cd")
    assert code in str(exc.value) and "position 2" in str(exc.value)


def test_tabs_and_newlines_are_fine_and_collapsed():
    assert validate_query("  how\tdo I\n\nmove \r\n fast  ") == "how do I move fast"


def test_non_text_query():
    with pytest.raises(InputError, match="must be text"):
        validate_query(42)


# ---- detect_comparison -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, entities",
    [
        ("Lethal x+ vs Piercing x", ["Lethal x+", "Piercing x"]),
        ("Dash vs. Charge?", ["Dash", "Charge"]),
        ("Dash versus Charge", ["Dash", "Charge"]),
        ("compare Dash and Charge", ["Dash", "Charge"]),
        ("Compare Dash with Charge.", ["Dash", "Charge"]),
        ("compare Dash, Charge and Fall Back", ["Dash", "Charge", "Fall Back"]),
        ("difference between Dash and Charge", ["Dash", "Charge"]),
        ("what's the difference between the Dash and the Charge?", ["Dash", "Charge"]),
        ("What are the differences between Shield Wall and Smoke Step", ["Shield Wall", "Smoke Step"]),
        ("How does Dash compare to Charge", ["Dash", "Charge"]),
        ("how does the Shield Wall compare with Cover?", ["Shield Wall", "Cover"]),
        ("How do Dash and Reposition differ?", ["Dash", "Reposition"]),
        ("how does a Dash and a Charge differ in cost", ["Dash", "Charge"]),
        ("How is Light Cover different from Heavy Cover?", ["Light Cover", "Heavy Cover"]),
        ("Blast or Torrent: what's the difference?", ["Blast", "Torrent"]),
        ("Blast vs Torrent - what's the difference", ["Blast", "Torrent"]),
        ("Piercing and Piercing Crits, what is the difference?", ["Piercing", "Piercing Crits"]),
        ("What's the difference: Dash or Charge?", ["Dash", "Charge"]),
    ],
)
def test_detect_comparison(query, entities):
    assert detect_comparison(query) == entities


@pytest.mark.parametrize(
    "query", ["how do I move?", "what is the difference between", "compare Dash", "vs", "Charge distance", "",
              "Torrent - what's the difference", "what's the difference?", "how do I move and shoot?",
              "can I Dash or Charge after falling back?"]
)
def test_not_a_comparison(query):
    assert detect_comparison(query) is None


# ---- QueryProcessor --------------------------------------------------------------------------------------------------


def test_keyword_normalisation_makes_casings_identical():
    qp = QueryProcessor(LIBRARY)
    out = {q: qp.process(q) for q in ("accurate 1", "Accurate 1", "ACCURATE 1", "  accurate   1 ")}
    assert {p.text for p in out.values()} == {"Accurate 1"}
    assert {p.bm25_text for p in out.values()} == {"Accurate 1"}
    assert qp.process("does LETHAL X+ work with shield WALL").text == "does Lethal x+ work with Shield Wall"
    # a term without a slot value is not a parameterised mention
    assert qp.process("accurate shots").text == "accurate shots"


def test_normalisation_off_keeps_casing_but_still_validates():
    qp = QueryProcessor(LIBRARY, normalise=False)
    p = qp.process(" ACCURATE\t1 ")
    assert (p.raw, p.text) == ("ACCURATE 1", "ACCURATE 1")


def test_synonym_expansion_goes_to_bm25_only():
    qp = QueryProcessor(LIBRARY, {"regain wounds": ["heal"]})
    p = qp.process("how do I heal")
    assert p.text == "how do I heal"
    assert "regain wounds" not in p.text
    assert p.bm25_text == "how do I heal regain wounds"
    assert p.expansions == ["regain wounds"]
    # whole words only: "healthy" does not use "heal"
    assert qp.process("a healthy operative").expansions == []
    # case-insensitive user word
    assert qp.process("HEAL me").bm25_text == "HEAL me regain wounds"


def test_expansion_off():
    qp = QueryProcessor(LIBRARY, {"regain wounds": ["heal"]}, expansion=False)
    p = qp.process("how do I heal")
    assert p.bm25_text == p.text == "how do I heal" and p.expansions == []


def test_official_term_already_present_is_not_added_again():
    qp = QueryProcessor(LIBRARY, {"regain wounds": ["heal", "recover"], "Dash": ["sprint", "run"]})
    p = qp.process("heal to regain wounds")
    assert p.expansions == [] and p.bm25_text == "heal to regain wounds"
    # two user words of one term: the term is added once
    p = qp.process("heal and recover")
    assert p.expansions == ["regain wounds"] and p.bm25_text.count("regain wounds") == 1
    p = qp.process("sprint or heal")
    assert sorted(p.expansions) == ["Dash", "regain wounds"]


def test_an_official_term_inside_another_word_does_not_count_as_named():
    qp = QueryProcessor(LIBRARY, {"ploy": ["trick"], "Dash": ["sprint"]})
    assert qp.process("a trick to redeploy").expansions == ["ploy"]  # "redeploy" does not name "ploy"
    assert qp.process("a trick, a ploy").expansions == []
    assert qp.process("sprint past the dashboard").expansions == ["Dash"]


def test_process_reports_comparison_on_the_normalised_text():
    qp = QueryProcessor(LIBRARY)
    assert qp.process("lethal 5+ vs accurate 2").comparison == ["Lethal 5+", "Accurate 2"]
    assert qp.process("how do I move").comparison is None


def test_process_respects_max_chars():
    with pytest.raises(InputError):
        QueryProcessor(LIBRARY, max_chars=10).process("x" * 11)


# ---- load_synonyms ---------------------------------------------------------------------------------------------------


def test_load_synonyms_good_file(tmp_path):
    p = tmp_path / "syn.yaml"
    p.write_text("# official: user words\nregain wounds: [heal, ' healing ']\nDash: sprint\n", encoding="utf-8")
    assert load_synonyms(p) == {"regain wounds": ["heal", "healing"], "Dash": ["sprint"]}
    assert load_synonyms(None) == {}
    (tmp_path / "empty.yaml").write_text("", encoding="utf-8")
    assert load_synonyms(tmp_path / "empty.yaml") == {}


@pytest.mark.parametrize(
    "text, line, what",
    [
        ("Dash: [sprint]\nCharge: 5\n", 2, "'Charge' must map to a list"),
        ("Dash: [sprint]\nCharge:\n  a: b\n", 2, "'Charge' must map to a list"),
        ("Dash: [sprint]\n\nCharge: [rush, '']\n", 3, "'Charge' must map to a list"),
        ("Dash: [sprint]\n'': [rush]\n", 2, "non-empty string"),
        ("Dash: [sprint]\n'  ': [rush]\n", 2, "non-empty string"),
    ],
)
def test_load_synonyms_bad_files_name_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "syn.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_synonyms(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:{line}:") and what in msg


def test_load_synonyms_not_a_mapping(tmp_path):
    p = tmp_path / "syn.yaml"
    p.write_text("- heal\n- dash\n", encoding="utf-8")
    with pytest.raises(InputError, match="must be a mapping"):
        load_synonyms(p)
