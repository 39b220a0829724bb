"""Hop judges: the reference judge on hand-built contexts, and the LLM judge against a real
OpenAI-compatible stub server on loopback (good JSON, bad JSON, timeout, HTTP 500 then success)."""

from __future__ import annotations

import json
import time

import pytest
from ragrig.configs.errors import RagrigError
from ragrig.configs.models import JudgeConfig
from ragrig.retrieval.multihop.hops import place
from ragrig.retrieval.multihop.judges import ReferenceJudge, names_section, parse_missing
from ragrig.retrieval.multihop.llm_judge import LLMJudge
from ragrig.retrieval.results import Hit


def hit(cid: str, text: str, hop: int = 0, header: list[str] | None = None) -> Hit:
    return Hit(chunk_id=cid, doc_id=cid.split("#")[0], header_path=header or [cid], text=text, score=1.0, hop=hop)


class FakeLookup:
    """Terms named in text (exact, case-insensitive) and the chunk ids of each term's own section."""

    def __init__(self, sections: dict[str, set[str]]) -> None:
        self.sections = sections

    def terms_in(self, text: str) -> list[str]:
        low = text.casefold()
        return [t for t in self.sections if t.casefold() in low]

    def sections_of(self, term: str) -> set[str]:
        return self.sections.get(term, set())


LOOKUP = FakeLookup({"Lethal": {"rules.md#3"}, "Piercing": {"rules.md#4"}, "Fall Back": {"core.md#7"}})


def test_reference_judge_asks_for_a_rule_a_chunk_names():
    hits = [hit("teams.md#1", "Ripper Blade: Lethal 5+, Balanced", header=["Reavers", "Ripper Blade"]),
            hit("teams.md#2", "a profile with nothing")]
    j = ReferenceJudge(LOOKUP).judge("what does the ripper blade do?", hits)
    assert not j.can_answer
    assert [(m.item, m.origin) for m in j.missing] == [("Lethal", "teams.md#1")]


def test_reference_judge_puts_query_terms_first_and_skips_sections_already_present():
    hits = [hit("teams.md#1", "Piercing 1 and Lethal 5+"), hit("rules.md#3", "Lethal x+ explained")]
    j = ReferenceJudge(LOOKUP, scan_hits=3).judge("can I Fall Back after shooting?", hits)
    # Fall Back (named by the query) first; Lethal is already in the context; Piercing named by hit 1
    assert [(m.item, m.origin) for m in j.missing] == [("Fall Back", None), ("Piercing", "teams.md#1")]


def test_reference_judge_can_answer_when_nothing_new_is_named():
    hits = [hit("rules.md#3", "Lethal x+: successes on x+ are critical"), hit("x.md#0", "no rule names here")]
    j = ReferenceJudge(LOOKUP).judge("what is lethal?", hits)
    assert j.can_answer and j.missing == []


def test_reference_judge_scans_only_the_best_chunk_by_default():
    hits = [hit("a.md#0", "nothing to follow"), hit("b.md#0", "Piercing 1")]
    assert ReferenceJudge(LOOKUP, anchored=False).judge("query", hits).can_answer
    assert [m.item for m in ReferenceJudge(LOOKUP, scan_hits=2, anchored=False).judge("query", hits).missing] == [
        "Piercing"]


def test_reference_judge_limits_items_and_only_scans_the_newest_hop():
    hits = [hit("a.md#0", "Piercing 1", hop=0), hit("b.md#0", "Fall Back now", hop=1)]
    j = ReferenceJudge(LOOKUP, max_items=1, scan_hits=3, anchored=False).judge("query", hits)
    assert [m.item for m in j.missing] == ["Fall Back"]  # hop 0's Piercing is not re-scanned


def test_anchored_judge_does_not_follow_references_of_a_chunk_the_query_does_not_name():
    # a general question: the top chunk ("What You Need") mentions a rule, but the query names neither the
    # rule nor the chunk's section, so following it would only push the query's own hits out of the window
    hits = [hit("intro.md#1", "You need dice, a tape measure and Piercing tokens", header=["Introduction", "What You Need"])]
    j = ReferenceJudge(LOOKUP).judge("what size table do I need to play?", hits)
    assert j.can_answer and j.missing == []
    assert "names no" in j.reasoning
    # the same context when the query names the section (any case, possessive): the chain is followed
    j = ReferenceJudge(LOOKUP).judge("what's in the introduction's list of what you need?", hits)
    assert [(m.item, m.origin) for m in j.missing] == [("Piercing", "intro.md#1")]
    # ... or when the query names a followable rule itself, which anchors the chain too
    j = ReferenceJudge(LOOKUP).judge("does Fall Back work here?", hits)
    assert [m.item for m in j.missing] == ["Fall Back", "Piercing"]
    # anchored=False restores the unconditional behaviour
    assert [m.item for m in ReferenceJudge(LOOKUP, anchored=False).judge("what size table?", hits).missing] == [
        "Piercing"]


@pytest.mark.parametrize(
    "query, path, named",
    [
        ("stuck in a Web spell", ["Spells", "Web"], True),
        ("what does a cleric's Turn Undead do?", ["Cleric", "Channel Divinity: Turn Undead"], True),
        ("can tieflings see in the dark?", ["Tiefling", "Tiefling Traits"], True),
        ("how do webs work", ["Web"], True),  # plural
        ("a website question", ["Web"], False),  # whole words only
        ("what size table do I need?", ["Introduction", "What You Need"], False),
        ("an ox", ["Ox"], False),  # titles under 3 characters never anchor
    ],
)
def test_names_section(query: str, path: list[str], named: bool) -> None:
    assert names_section(query, path) is named


@pytest.mark.parametrize(
    "raw, expected",
    [
        (["Lethal x+, Piercing x"], ["Lethal x+", "Piercing x"]),
        ('"Fall Back"; \'Dash\'\n- Charge', ["Fall Back", "Dash", "Charge"]),
        (["Dash", "dash", " "], ["Dash"]),
    ],
)
def test_parse_missing(raw, expected):
    assert parse_missing(raw) == expected


def test_place_fills_the_end_of_the_window_and_moves_deeper_duplicates_up():
    base = [hit(f"{c}#0", "") for c in "abcde"]
    new1, new2 = hit("x#0", "", 1), hit("d#0", "", 1)  # d is already ranked 4th, below a window of 3
    out = place(base, [(new1, "b#0"), (new2, None)], window=3)
    # at least half the window (2 of 3) stays with hop-0 hits, so the second addition lands just outside it
    assert [h.chunk_id for h in out] == ["a#0", "b#0", "x#0", "d#0", "c#0", "e#0"]
    assert [h.hop for h in out] == [0, 0, 1, 1, 0, 0]
    out = place(base, [(new1, "b#0"), (new2, None)], window=5)
    assert [h.chunk_id for h in out] == ["a#0", "b#0", "c#0", "x#0", "d#0", "e#0"]
    # a window larger than the list: appended at the end
    assert [h.chunk_id for h in place(base[:2], [(new1, None)], window=10)] == ["a#0", "b#0", "x#0"]


# ---- the LLM judge against a stub server on loopback ------------------------------------------
@pytest.fixture
def stub(llm_stub):
    return llm_stub



def reply(content: object) -> dict:
    text = content if isinstance(content, str) else json.dumps(content)
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def judge(url: str, **kw) -> LLMJudge:
    cfg = JudgeConfig(kind="llm", base_url=url, model="stub", timeout_s=kw.pop("timeout_s", 5.0),
                      retries=kw.pop("retries", 2), backoff_s=0.01, api_key_env="RAGRIG_TEST_KEY", **kw)
    return LLMJudge(cfg, header_titles=lambda q: ["Lethal x+", "Piercing x"])


HITS = [hit("teams.md#1", "Ripper Blade: Lethal 5+")]


def test_llm_judge_good_json(stub, monkeypatch):
    state, url = stub
    monkeypatch.setenv("RAGRIG_TEST_KEY", "sk-stub-key")
    state.script.append((200, reply({"can_answer": False, "reasoning": "needs Lethal", "missing": ["Lethal x+, Piercing x"]})))
    j = judge(url).judge("what does the ripper blade do?", HITS)
    assert (j.can_answer, j.reasoning, [m.item for m in j.missing]) == (False, "needs Lethal", ["Lethal x+", "Piercing x"])
    req = state.requests[0]
    assert req["model"] == "stub" and req["response_format"]["type"] == "json_schema"
    prompt = req["messages"][-1]["content"]
    assert "Ripper Blade: Lethal 5+" in prompt and "Lethal x+; Piercing x" in prompt
    assert state.headers[0]["Authorization"] == "Bearer sk-stub-key"


def test_llm_judge_bad_json_is_a_clear_error(stub):
    state, url = stub
    state.script.append((200, reply("this is not json")))
    with pytest.raises(RagrigError, match="not valid JSON"):
        judge(url).judge("q", HITS)
    state.script.append((200, reply({"reasoning": "no can_answer"})))
    with pytest.raises(RagrigError, match="does not match the schema"):
        judge(url).judge("q", HITS)


def test_llm_judge_timeout_then_gives_up_with_a_clear_error(stub):
    state, url = stub
    state.script += [(200, None), (200, None)]
    t0 = time.perf_counter()
    with pytest.raises(RagrigError, match=r"timed out after 0.2 s \(2 attempts\)"):
        judge(url, timeout_s=0.2, retries=1).judge("q", HITS)
    assert time.perf_counter() - t0 < 5


def test_llm_judge_retries_http_500_then_succeeds(stub):
    state, url = stub
    state.script += [(500, {"error": "boom"}), (503, {"error": "busy"}),
                     (200, reply({"can_answer": True, "reasoning": "enough", "missing": []}))]
    j = judge(url, retries=2).judge("q", HITS)
    assert j.can_answer and len(state.requests) == 3


def test_llm_judge_unreachable_and_http_400():
    with pytest.raises(RagrigError, match="unreachable"):
        judge("http://127.0.0.1:9/v1", retries=0).judge("q", HITS)


def test_llm_judge_client_error_is_not_retried(stub):
    state, url = stub
    state.script += [(401, {"error": "bad key"})]
    with pytest.raises(RagrigError, match="HTTP 401"):
        judge(url).judge("q", HITS)
    assert len(state.requests) == 1


def test_place_keeps_earlier_hops_when_a_later_hop_adds_more():
    base = [hit(f"{c}#0", "") for c in "abcd"]
    hop1 = place(base, [(hit("x#0", "", 1), None)], window=3)
    assert [h.chunk_id for h in hop1] == ["a#0", "b#0", "x#0", "c#0", "d#0"]
    hop2 = place(hop1, [(hit("y#0", "", 2), None)], window=3)
    assert [h.chunk_id for h in hop2] == ["a#0", "b#0", "x#0", "y#0", "c#0", "d#0"]  # hop 1 keeps its place
    wide = place(place(base, [(hit("x#0", "", 1), None)], window=4), [(hit("y#0", "", 2), None)], window=4)
    assert [h.chunk_id for h in wide] == ["a#0", "b#0", "x#0", "y#0", "c#0", "d#0"]
