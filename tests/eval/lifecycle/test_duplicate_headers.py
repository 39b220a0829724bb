"""Issue 27 in the test-set lifecycle: ``testset check``, the fingerprints it records and follows, and ``testset
draft`` resolve and write section references in the one matching order, so headers whose text repeats (told
apart by anchor or case) are checked, re-anchored and drafted instead of failing as ambiguous."""

from __future__ import annotations

from types import SimpleNamespace

from ragrig.eval.lifecycle.check import check_testset, targets
from ragrig.eval.lifecycle.drafts import draft_testset, write_drafts
from ragrig.eval.lifecycle.fingerprints import fingerprint
from ragrig.eval.testset import Case, Expectation, TestSet
from ragrig.retrieval.documents import Document
from ragrig.retrieval.ingest.chunking import ChunkingParams, chunk_document
from ragrig.retrieval.ingest.keyword_mining import build_library
from ragrig.retrieval.markdown import parse_headers

V1 = """# Additional Status Codes { #additional-status-codes }

Return a JSONResponse to send an additional status code.

## Additional status codes { #additional-status-codes_1 }

The note on codes other than the default.

## Variant {#variant-json}

The JSON variant.

## Variant {#variant-yaml}

The YAML variant.
"""
V2 = V1.replace("{#variant-yaml}", "{#variant-yml}")  # the site generator renamed an anchor; the text is the same


def docs(text: str) -> dict[str, Document]:
    return {"status.md": Document(doc_id="status.md", sha256="0" * 64, format="md", markdown=text)}


def make_testset(*expect: Expectation) -> TestSet:
    return TestSet(name="status", cases=[Case(id=f"c{i}", query="q", expect=[e]) for i, e in enumerate(expect)])


def test_check_records_the_fingerprint_of_the_section_the_reference_names():
    ts = make_testset(Expectation(doc="status.md", section="Additional status codes { #additional-status-codes_1 }"),
                 Expectation(doc="status.md", section="Variant {#variant-yaml}"))
    report = check_testset(ts, docs(V1), "v000001")
    assert report.counts == {"ok": 2, "moved": 0, "changed": 0, "gone": 0}
    note, yaml = (c.expectations[0] for c in report.cases)
    # a fingerprint hashes the section's own text, without its header line (the H2's ends at the next H2)
    assert note.fingerprint == fingerprint("The note on codes other than the default.")
    assert yaml.fingerprint == fingerprint("The YAML variant.")


def test_a_renamed_anchor_is_followed_by_its_text_and_rewritten_with_the_new_anchor():
    ts = make_testset(Expectation(doc="status.md", section="Variant {#variant-yaml}", grade=2))
    report = check_testset(ts, docs(V2), "v000002", docs(V1), "v000001")
    [ec] = report.cases[0].expectations
    assert (ec.status, ec.now_doc, ec.now_section) == ("moved", "status.md", "Variant {#variant-yml}")
    assert ec.fingerprint == ec.reference == fingerprint("The YAML variant.")
    [now] = targets(report, ts)["c0"]
    [then] = targets(report, ts, reference=True)["c0"]
    assert (now.key, now.start) == ("status.md#Variant {#variant-yml}", V2.index("## Variant {#variant-yml}"))
    assert (then.key, then.start) == ("status.md#Variant {#variant-yaml}", V1.index("## Variant {#variant-yaml}"))


TEAM = """# Team

## Operatives

### Marksman {#marksman-rifle}

The marksman carries a long rifle with Lethal 5+ and Balanced, and prefers to shoot from high ground at long range.

### Marksman {#marksman-pistol}

The other marksman carries a pistol and a knife, and prefers to fight up close from behind cover in the ruins.
"""
WEAPONS = """# Weapons

## Attack Rules

### Lethal x+

Your successes are critical successes on a roll of x+ instead of only on a 6, which makes every attack far more deadly.
"""


def test_drafts_keep_the_anchor_where_the_plain_text_names_two_sections(tmp_path):
    by_id = {d: Document(doc_id=d, sha256="0" * 64, format="md", markdown=t)
             for d, t in {"team.md": TEAM, "weapons.md": WEAPONS}.items()}
    chunks = [c for d in sorted(by_id) for c in chunk_document(by_id[d], ChunkingParams(max_header_level=4,
                                                                                       max_tokens=200))]
    library = build_library([h.title for d in by_id.values() for h in parse_headers(d.markdown)],
                            [c.text for c in chunks])
    version = SimpleNamespace(documents_by_id=by_id, chunks=chunks, keywords=library, version="v000001",
                              manifest={}, layout=SimpleNamespace(key="toy-abc123"))
    ts = draft_testset(version, kinds=["exact-term", "multi-hop"])
    # "Marksman" heads two sections: it is no term (no exact-term draft for it); the rifle profile names Lethal 5+
    assert [(c.id, [(e.doc, e.section) for e in c.expect]) for c in ts.cases] == [
        ("draft-exact-term-lethal", [("weapons.md", "Lethal x+")]),
        ("draft-multi-hop-marksman-lethal", [("team.md", "Marksman {#marksman-rifle}"), ("weapons.md", "Lethal x+")]),
    ]
    summary = write_drafts(ts, version, tmp_path / "drafts.yaml")
    assert summary["resolved"] == summary["drafts"] == 2
    assert '{doc: "team.md", section: "Marksman {#marksman-rifle}", grade: 2' in (tmp_path / "drafts.yaml").read_text()
