"""Issue 30, items 1 and 8: user text is text in every terminal renderer, and renderers take every hop row the
library produces (a failed judge's hop has no decision).

Before: a header ``## Closing [/bold] tag rules``, a query ``[/italic] marimba`` or a test set named ``rich[/x]``
made ``query``/``eval`` exit 1 with rich's MarkupError; other bracketed text vanished (the model-change warning
printed ``(model  -> model )``), ``[link=…]`` became a live terminal link, ``:smile:`` an emoji; and
``query --debug`` crashed with ``KeyError: 'can_answer'`` on a failed hop.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ragrig.flows.cli import main

# every kind of markup rich would read: a closing tag with no opening, a link, a style, an emoji code, and the
# part of a model id the model-change warning lost
HOSTILE = "[/bold] [link=http://evil.example]here[/link] [red]r[/red] :smile: [torch; sha256:ab12]"


def sets(corpus: Path) -> list[str]:
    return ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]


# ---- the renderers, each fed the hostile text in every field that comes from a user -----------------------
def renderer_calls(make_report) -> dict:
    from ragrig.eval.compare import Comparison, Flip, MetricDelta
    from ragrig.eval.gate import BLOCK, Check, GateResult
    from ragrig.eval.lifecycle.check import CaseCheck, CheckReport, ExpectationCheck
    from ragrig.eval.lifecycle.yaml_write import WriteSummary
    from ragrig.flows.render import cases, compare, evaluation, gate, ingest, lifecycle, query, sweep
    from ragrig.retrieval.results import Hit, RetrievalResult

    report = make_report(testset=f"rich{HOSTILE}").to_dict()
    row = report["per_query"][0]
    row.update(id=f"q{HOSTILE}", query=f"ask {HOSTILE}", expected=[f"a.md#{HOSTILE}"])
    row["top"][0].update(chunk_id=f"a.md#{HOSTILE}", header=f"H {HOSTILE}")
    row["hops"] = [{"hop": 1, "error": f"judge down {HOSTILE}", "added": [], "found": [], "recall_gain@10": 0.0}]
    report["per_tag"] = {f"tag{HOSTILE}": report["per_tag"]["rules"]}
    hit = Hit(chunk_id=f"a.md#{HOSTILE}", doc_id=f"a{HOSTILE}.md", header_path=[f"Closing {HOSTILE}"], text="t",
              score=1.0, reason=f"hop: {HOSTILE}")
    res = RetrievalResult(query=f"[/italic] marimba {HOSTILE}", normalized=f"n {HOSTILE}", bm25_query=f"b {HOSTILE}",
                          expansions=[HOSTILE], comparison=[HOSTILE, "x"], hits=[hit], version="v000001",
                          hops=[{"hop": 1, "error": f"judge down {HOSTILE}", "added": [], "ms": 1.0}])
    cmp = Comparison(baseline=f"b{HOSTILE}", candidate=f"c{HOSTILE}", testset=f"t{HOSTILE}", n=1, k=10,
                     metrics=[MetricDelta("ndcg@10", 0.5, 0.6, 0.1, 0.5, 0.5, 1, 0, 0)],
                     flips=[Flip(f"q{HOSTILE}", "q", "lost", 1, None)], warnings=[f"w {HOSTILE}"])
    check = Check(name=f"must-pass: q{HOSTILE}", verdict=BLOCK, reason=f"r {HOSTILE}")
    exp = ExpectationCheck(index=0, doc=f"a{HOSTILE}.md", section=f"S {HOSTILE}", grade=2, status="gone",
                           reason=f"gone {HOSTILE}")
    report_check = CheckReport(testset=f"rich{HOSTILE}", path=None, version="v000001", reference_version=None,
                               cases=[CaseCheck(id=f"q{HOSTILE}", query="q", status="gone", draft=False,
                                                expectations=[exp])])
    stats = {"index_key": f"k{HOSTILE}", "version": "v000002", "published": True, "docs_seen": 1, "docs_new": 1,
             "docs_changed": 0, "docs_unchanged": 0, "docs_removed": 0, "docs_failed": 1, "chunks": 1,
             "chunks_embedded": 1, "chunks_cached": 0, "chunks_over_window": 0, "index_dir": f"/x/{HOSTILE}",
             "failures": [{"doc_id": f"d{HOSTILE}.md", "stage": "extract", "reason": f"bad {HOSTILE}"}],
             "warnings": [f"the model changed (model {HOSTILE} -> model [onnx; sha256:cd34]): re-embedding"]}
    sweep_result = {"name": f"s{HOSTILE}", "seconds": {"total": 1.0}, "metric": "ndcg@10",
                    "rows": [{"label": "a", "testset": f"t{HOSTILE}", "overrides": {"x.y": f"v{HOSTILE}"},
                              "metrics": {"ndcg@10": 0.5}}],
                    "best": {"label": "a", "testset": f"t{HOSTILE}", "overrides": {"x.y": f"v{HOSTILE}"},
                             "metrics": {"ndcg@10": 0.5}}}
    return {
        "ingest": lambda: ingest.print_ingest(stats),
        "evaluation": lambda: evaluation.print_eval(report),
        "cases": lambda: cases.print_cases({**report, "index": {"key": "k", "version": "v1"}}),
        "query": lambda: query.print_query(res, f"k{HOSTILE}", debug=True),
        "compare": lambda: compare.print_comparison(cmp),
        "gate": lambda: gate.print_gate([GateResult(testset=f"t{HOSTILE}", verdict=BLOCK, checks=[check],
                                                    comparison={})]),
        "check": lambda: lifecycle.print_check(report_check),
        "write": lambda: lifecycle.print_write(WriteSummary(path=f"/x/{HOSTILE}.yaml", moved=1)),
        "sweep": lambda: sweep.print_sweep(sweep_result),
    }


@pytest.mark.parametrize("name", ["ingest", "evaluation", "cases", "query", "compare", "gate", "check", "write",
                                  "sweep"])
def test_every_renderer_prints_bracketed_user_text_verbatim(name, make_report, capsys):
    renderer_calls(make_report)[name]()  # before: MarkupError ("closing tag '[/bold]' … doesn't match")
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # tables may wrap a long cell
    assert " ".join(HOSTILE.split()) in flat or HOSTILE.replace(" ", "") in flat.replace(" ", ""), out
    assert "\x1b]8;" not in out and "😄" not in out  # no terminal link, no emoji


ESCAPES = "\x1b[31mred\x1b]0;retitled\x07 \x1b[2J \x9b1m \r"  # colour, window title, clear screen, C1, CR


@pytest.mark.parametrize("name", ["ingest", "evaluation", "cases", "query", "compare", "gate", "check", "write",
                                  "sweep"])
def test_every_renderer_shows_control_characters_instead_of_obeying_them(name, make_report, capsys, monkeypatch):
    """A header, file name, query or answer with an escape sequence recoloured, retitled or cleared the terminal
    (hostile probes, 2026-11-29: `query` printed a corpus header's ESC raw, errors echoed a path's)."""
    monkeypatch.setattr(sys.modules[__name__], "HOSTILE", ESCAPES)
    renderer_calls(make_report)[name]()
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x9b\r"), repr(out)
    assert "\\x1b[31mred" in out, out


def test_an_error_line_shows_control_characters_instead_of_obeying_them(tmp_path, capsys):
    bad = tmp_path / f"{ESCAPES.strip()}.yaml"
    assert main(["query", "-c", str(bad), "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\\x1b]0;retitled\\x07" in err and not any(c in err for c in "\x1b\x07\r")


def test_the_model_change_warning_keeps_both_model_ids(make_report, capsys):
    renderer_calls(make_report)["ingest"]()
    out = capsys.readouterr().out
    assert f"(model {HOSTILE} -> model [onnx; sha256:cd34])" in " ".join(out.split()), out


def test_the_console_parses_no_markup_even_in_a_terminal():
    from ragrig.flows.render.console import console, line, styled

    assert console._markup is False and console._emoji is False  # noqa: SLF001 - the one boundary
    with console.capture() as cap:
        console.print(f"[/bold] {HOSTILE}")
        console.print(line(("warning:", "yellow"), f" {HOSTILE}"))
        console.print(styled(HOSTILE, "bold"))
    assert cap.get().count(HOSTILE) == 3, cap.get()


def test_no_renderer_builds_markup_strings():
    """The renderers style with Text objects, never with ``[style]…[/style]`` written into a string (with the
    console's markup off, such a string would print its tags; with it on, user text inside it is markup)."""
    import re

    root = Path(__file__).resolve().parents[2] / "flows" / "render"
    tag = re.compile(r"\[/?(bold|dim|red|green|yellow|cyan|link|italic)[^\]]*\]")
    for path in root.glob("*.py"):
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
        body = code.split('"""', 2)[-1] if code.lstrip().startswith('"""') else code
        assert not tag.search(body) and "escape(" not in body, path


# ---- end to end: query, eval and eval --case over a corpus with hostile headers ----------------------------
DOCS = {
    "rules.md": ("# Rules\n\n## Closing [/bold] tag rules\n\nThe marimba closes every bracket tag at the end.\n\n"
                 "## See [link=http://evil.example]here[/link] :smile:\n\nMove six inches in a straight line.\n"),
}


@pytest.fixture
def indexed(published):
    """DOCS published in this test's home (a copy of one ingest per test process: conftest ``published``)."""
    return published(DOCS)


def test_query_and_eval_print_bracketed_headers_queries_and_test_set_names(indexed, tmp_path, capsys):
    corpus = indexed
    capsys.readouterr()
    rc = main(["query", "[/italic] marimba", "--local", *sets(corpus)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    flat = " ".join(out.split())
    assert "'[/italic] marimba'" in flat and "Closing [/bold] tag rules" in flat, out
    assert "See [link=http://evil.example]here[/link] :smile:" in flat, out

    ts = tmp_path / "ts.yaml"
    ts.write_text("name: rich[/x]\ncases:\n  - id: c1\n    query: \"[/italic] marimba\"\n    expect:\n"
                  "      - doc: rules.md\n        section: \"Closing [/bold] tag rules\"\n")
    report = tmp_path / "report.json"
    rc = main(["eval", "--no-prefect", "-t", str(ts), "--output-json", str(report), *sets(corpus)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "ragrig eval: rich[/x] on" in out and "rich[/x]" in report.read_text()
    rc = main(["eval", "--no-prefect", "-t", str(ts), "--case", "c1", *sets(corpus)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "c1 (rich[/x] on" in out and "[/italic] marimba" in out


def test_query_debug_shows_a_failed_judge_hop_instead_of_crashing(indexed, llm_stub, monkeypatch, capsys):
    state, url = llm_stub
    state.script.append((401, {"error": "invalid key"}))
    corpus = indexed
    capsys.readouterr()
    rc = main(["query", "marimba", "--local", "--debug", "--max-hops", "1", *sets(corpus),
               "--set", "retrieval.judge.kind=llm", "--set", f"retrieval.judge.base_url={url}",
               "--set", "retrieval.judge.retries=0"])
    out, err = capsys.readouterr()
    assert rc == 0, err  # before: KeyError: 'can_answer'
    hop = next(line for line in out.splitlines() if line.startswith("hop 1:"))
    assert "the judge failed" in hop and "HTTP 401" in hop, out


def test_hop_rows_keep_a_failed_hops_error_and_its_summary_says_so():
    from ragrig.eval.hop_diagnostics import hop_rows, hop_summary
    from ragrig.retrieval.results import RetrievalResult

    res = RetrievalResult(query="q", normalized="q", bm25_query="q", expansions=[], comparison=None, hits=[],
                          version="v1", hops=[{"hop": 1, "error": "LLM judge at …: HTTP 401", "added": []}])
    rows = hop_rows(res, [])
    assert rows[0]["error"] == "LLM judge at …: HTTP 401" and rows[0]["can_answer"] is False
    assert hop_summary(rows) == "1: judge failed"
