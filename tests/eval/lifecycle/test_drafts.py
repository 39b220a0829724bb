"""``ragrig testset draft`` on a two-document corpus (chunked and keyword-mined for real): each kind of draft,
marked draft: true with its reason, fingerprinted, resolvable, skipped by evaluation; ``--llm`` against a
loopback stub of the OpenAI-compatible endpoint."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import JudgeConfig
from ragrig.eval.lifecycle.drafts import draft_testset, spread, write_drafts
from ragrig.eval.lifecycle.fingerprints import fingerprint
from ragrig.eval.lifecycle.rephrase import rephrase_drafts
from ragrig.eval.testset import load_testset
from ragrig.retrieval.documents import Document
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document
from ragrig.retrieval.ingest.keyword_mining import build_library
from ragrig.retrieval.markdown import parse_headers

WEAPONS = """# Weapons

## Attack Rules

### Lethal x+

Your successes are critical successes on a roll of x+ instead of only on a 6, which makes every attack far more deadly.

### Balanced

You can re-roll one of your attack dice when you make an attack with this weapon and keep the new result.
"""
TEAM = """# Team

## Operatives

### Marksman

The marksman carries a long rifle with Lethal 5+ and Balanced, and prefers to shoot from high ground at long range.
"""


@pytest.fixture(scope="module")
def version():
    docs = {d: Document(doc_id=d, sha256="0" * 64, format="md", markdown=t)
            for d, t in {"weapons.md": WEAPONS, "team.md": TEAM}.items()}
    chunks = [c for d in sorted(docs) for c in chunk_document(docs[d], ChunkingParams(max_header_level=4,
                                                                                     max_tokens=200))]
    library = build_library([h.title for d in docs.values() for h in parse_headers(d.markdown)], [c.text for c in chunks])
    return SimpleNamespace(documents_by_id=docs, chunks=chunks, keywords=library, version="v000001", manifest={},
                           layout=SimpleNamespace(key="toy-abc123"))


def test_spread_is_even_and_keeps_order():
    assert spread(list(range(10)), 4) == [0, 2, 5, 7]
    assert spread([1, 2], 5) == [1, 2]


def test_each_kind_of_draft(version):
    ts = draft_testset(version)
    got = [(c.id, c.query, [(e.doc, e.section) for e in c.expect], c.tags) for c in ts.cases]
    assert got == [
        # the library's terms that text mentions besides their own header, each heading one section
        ("draft-exact-term-marksman", "Marksman", [("team.md", "Marksman")], ["exact-term", "single-hop"]),
        ("draft-exact-term-lethal", "Lethal 2+", [("weapons.md", "Lethal x+")], ["exact-term", "single-hop"]),
        ("draft-exact-term-balanced", "Balanced", [("weapons.md", "Balanced")], ["exact-term", "single-hop"]),
        # sections with text of their own and a title no other section has ("Attack Rules" has no text)
        ("draft-header-marksman", "What does Marksman do?", [("team.md", "Marksman")], ["single-hop"]),
        ("draft-header-lethal-x", "What does Lethal x+ do?", [("weapons.md", "Lethal x+")], ["single-hop"]),
        ("draft-header-balanced", "What does Balanced do?", [("weapons.md", "Balanced")], ["single-hop"]),
        # two siblings under one parent
        ("draft-comparison-lethal-x-vs-balanced", "What is the difference between Lethal x+ and Balanced?",
         [("weapons.md", "Lethal x+"), ("weapons.md", "Balanced")], ["comparison"]),
        # the Marksman's profile names "Lethal 5+", which heads the Lethal x+ rule: the reference judge's chain
        ("draft-multi-hop-marksman-lethal", "How does Lethal 5+ apply to Marksman?",
         [("team.md", "Marksman"), ("weapons.md", "Lethal x+")], ["multi-hop"]),
    ]
    assert all(c.draft for c in ts.cases)
    assert ts.cases[-1].reason == ("multi-hop: team.md#Team > Operatives > Marksman and weapons.md#Weapons > Attack "
                                   "Rules > Lethal x+ the first names 'Lethal', which heads the second")
    lethal_body = WEAPONS[WEAPONS.index("Your successes") : WEAPONS.index("### Balanced")]
    assert ts.cases[1].expect[0].fingerprint == fingerprint(lethal_body)
    assert ts.name == "toy-drafts"
    only = draft_testset(version, kinds=["comparison"], per_kind=1)
    assert [c.id for c in only.cases] == ["draft-comparison-lethal-x-vs-balanced"]


def test_written_drafts_resolve_and_evaluation_skips_them(version, tmp_path):
    out = tmp_path / "drafts.yaml"
    summary = write_drafts(draft_testset(version), version, out)
    assert summary["drafts"] == 8 and summary["resolved"] == 8
    assert summary["per_kind"] == {"exact-term": 3, "header": 3, "comparison": 1, "multi-hop": 1}
    text = out.read_text()
    assert text.startswith("# Drafts made by `ragrig testset draft`")
    assert '      - {doc: "weapons.md", section: "Lethal x+", grade: 2, fingerprint: "' in text
    with pytest.raises(InputError, match="all 8 cases are drafts"):
        load_testset(out)
    assert len(load_testset(out, drafts=True).cases) == 8
    # a person keeps one: removing its mark makes it a case evaluation runs
    kept = text.replace("    draft: true\n", "", 1)
    out.write_text(kept)
    ts = load_testset(out)
    assert [c.id for c in ts.cases] == ["draft-exact-term-marksman"] and ts.drafts_left_out == 7


# ---- --llm against a loopback stub --------------------------------------------------------------------------


def test_llm_rewrites_each_draft_through_the_judge_endpoint(version, llm_stub):
    state, url = llm_stub
    requests = state.requests
    cfg = JudgeConfig(kind="llm", base_url=url, model="stub-model", timeout_s=5, retries=0)
    ts = draft_testset(version, kinds=["comparison", "multi-hop"])
    state.reply(json.dumps({"query": "lethal or balanced - which is better for my guns?"}))
    state.reply(json.dumps({"query": "  my marksman has lethal 5+, what does that do?  "}))
    out = rephrase_drafts(ts, cfg)
    assert [c.query for c in out.cases] == ["lethal or balanced - which is better for my guns?",
                                            "my marksman has lethal 5+, what does that do?"]
    assert out.cases[1].reason.endswith("; phrased by stub-model from 'How does Lethal 5+ apply to Marksman?'")
    assert out.cases[1].expect == ts.cases[1].expect and out.cases[1].draft
    assert len(requests) == 2 and requests[0]["model"] == "stub-model" and requests[0]["temperature"] == 0
    assert requests[0]["response_format"]["json_schema"]["name"] == "draft_query"
    assert "Lethal x+; Balanced" in requests[0]["messages"][1]["content"]
    state.reply("not json")
    with pytest.raises(RagrigError, match="draft rephrasing of case 'draft-comparison-lethal-x-vs-balanced'"):
        rephrase_drafts(draft_testset(version, kinds=["comparison"]), cfg)
    state.reply(json.dumps({"query": " "}))
    with pytest.raises(RagrigError, match="the reply has no query"):
        rephrase_drafts(draft_testset(version, kinds=["comparison"]), cfg)
