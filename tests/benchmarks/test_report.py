"""benchmarks/report.py on small hand-written result files: goal verdicts, "not run", the ingest plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MACHINE = {"cpu": "Test CPU", "cores": 2, "ram_gib": 8.0, "python": "3.11", "torch": "2.0", "platform": "test"}


@pytest.fixture(scope="module")
def report(load_benchmark):
    return load_benchmark("report")


def _ingest(corpus: str, full: float, encode: float, again: float) -> dict:
    return {
        "corpus": corpus, "model": "m", "documents": 10, "chunks": 20, "unique_texts": 20,
        "full_ingest_s": full, "raw_encode_s": encode, "ratio_ingest_over_encode": round(full / encode, 3),
        "unchanged_reingest_s": again, "ratio_unchanged_over_full": round(again / full, 4),
        "stage_s": {"discover": 0.1, "plan": 0.0, "extract": 1.0, "chunk": 1.0, "embed": full - 2.3, "index": 0.2,
                    "publish": 0.0, "total": full},
        "changed_docs": 1, "changed_reingest_s": 0.5, "ratio_changed_over_full": round(0.5 / full, 4),
    }


def _latency(chunks: int, hybrid_p50: float, build_mb: float, query_mb: float) -> dict:
    st = {s: {"p50": 1.0, "p95": 2.0} for s in ("embed", "bm25", "vector", "fuse", "shape", "total")}
    st["hybrid_no_embed"] = {"p50": hybrid_p50, "p95": hybrid_p50 * 2}
    return {"index": f"synthetic-{chunks}", "chunks": chunks, "queries": 10, "open_s": 1.0, "candidates": 100,
            "stages_ms": st, "query_peak_rss_mb": query_mb, "rank_bm25_ms": {"skipped": "too big"},
            "build": {"reused": False, "build_s": 10.0, "build_peak_rss_mb": build_mb}}


def _eval_vs_raw(eval_s: float, raw_s: float) -> dict:
    return {
        "benchmark": "eval_vs_raw", "testset": "scifact-test", "queries": 300, "candidates": 100, "repeats": 3,
        "index": {"key": "scifact-x", "version": "v000001", "chunks": 9994}, "goal_ratio": 1.3,
        "excluded": ["MLflow logging"],
        "raw": {"encode_s": {"median": raw_s - 0.1, "samples": [raw_s - 0.1]},
                "bm25_s": {"median": 0.05, "samples": [0.05]}, "vector_s": {"median": 0.05, "samples": [0.05]},
                "total_s": {"median": raw_s, "samples": [raw_s]}},
        "rows": [{"label": "as configured (max_hops=1)", "max_hops": 1, "eval_s": {"median": eval_s, "samples": [eval_s]},
                  "ratio": round(eval_s / raw_s, 3), "met": eval_s / raw_s <= 1.3,
                  "instrumented": {"total_s": eval_s, "stages": {"embed": {"s": raw_s, "calls": 1, "texts": 300}}}}],
    }


def _write(folder: Path, name: str, data: object) -> None:
    (folder / name).write_text(json.dumps(data))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    _write(folder, "ingest_scifact.json", _ingest("scifact", full=110.0, encode=100.0, again=1.0))  # 1.10 met, 0.009 met
    _write(folder, "ingest_sample.json", _ingest("sample", full=20.0, encode=10.0, again=2.0))  # 2.0 MISSED, 0.1 MISSED
    _write(folder, "retrieval_latency.json", {"cpus": 2, "skipped": {}, "results": [
        _latency(100_000, hybrid_p50=8.0, build_mb=3000, query_mb=2000),      # 0.8 met
        _latency(1_000_000, hybrid_p50=60.0, build_mb=20000, query_mb=9000),  # 1.2 MISSED; RSS 20000/16384 MISSED
    ]})
    _write(folder, "eval_vs_raw.json", _eval_vs_raw(eval_s=3.0, raw_s=2.0))  # 1.5 MISSED
    _write(folder, "sweep_vs_eval_scifact-fusion.json", {"sweep": "scifact-fusion", "configs": 12, "queries": 300,
                                                         "one_eval_s": 4.0, "sweep_s": 5.0, "ratio": 1.25})  # met
    _write(folder, "multihop.json", [{"testset": "t", "tag": "overall", "n": 3, "max_hops": 0, "recall@10": 0.5}])
    return folder


def test_goal_verdicts(report, results: Path) -> None:
    md, goals = report.build_report(results, machine=MACHINE, date="2000-01-01")
    by = {(g.goal, g.subject): g for g in goals}
    ingest = "ingest wall ≤ 1.15 × raw encode"
    unchanged = "unchanged re-ingest ≤ 5 % of a full ingest"
    assert by[(ingest, "scifact")].verdict == "met" and by[(ingest, "scifact")].ratio == pytest.approx(1.1)
    assert by[(ingest, "sample")].verdict == "MISSED"
    assert by[(unchanged, "scifact")].verdict == "met"
    assert by[(unchanged, "sample")].verdict == "MISSED"
    lat = {g.subject: g for g in goals if g.goal.startswith("hybrid retrieval")}
    assert lat["100,000 chunks"].verdict == "met" and lat["100,000 chunks"].ratio == pytest.approx(0.8)
    assert lat["1,000,000 chunks"].verdict == "MISSED" and lat["1,000,000 chunks"].ratio == pytest.approx(1.2)
    mem = next(g for g in goals if g.goal.startswith("1M chunks"))
    assert mem.verdict == "MISSED" and mem.ratio == pytest.approx(20000 / 16384)
    ev = next(g for g in goals if g.goal.startswith("evaluation"))
    assert ev.verdict == "MISSED" and ev.ratio == pytest.approx(1.5)
    sweep = next(g for g in goals if "sweep" in g.goal)
    assert sweep.verdict == "met" and sweep.ratio == pytest.approx(1.25)
    # every goal is stated with its ratio and verdict in the Markdown
    assert "/ measured ratio 1.5 (limit 1.3)" in md and "**MISSED**" in md and "**met**" in md
    assert "Test CPU, 2 cores, 8.0 GiB RAM" in md and "2000-01-01" in md
    assert (results / "README.md").read_text(encoding="utf-8") == md


def test_missing_results_are_listed_as_not_run(report, results: Path) -> None:
    (results / "eval_vs_raw.json").unlink()
    (results / "sweep_vs_eval_scifact-fusion.json").unlink()
    md, goals = report.build_report(results, machine=MACHINE, date="2000-01-01")
    not_run = {g.goal for g in goals if g.verdict == "not run"}
    assert any(g.startswith("evaluation") for g in not_run)
    assert any("sweep" in g for g in not_run)
    for name in ("eval_vs_raw.json", "fusion_compare.json", "chunks_srd.json", "bm25_engines.json",
                 "sweep_vs_eval_scifact-fusion.json"):
        assert f"`{name}` (not run)" in md, name
    not_run_line = next(line for line in md.splitlines() if line.startswith("Not run:"))
    assert "`eval_vs_raw.json`" in not_run_line and "`ingest_srd.json`" in not_run_line
    assert "`multihop.json`" not in not_run_line


def test_no_results_at_all(report, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    md, goals = report.build_report(empty, machine=MACHINE, date="2000-01-01")
    assert goals and all(g.verdict == "not run" for g in goals)
    assert not (empty / "ingest.png").exists() and "ingest.png" not in md


def test_unreadable_json_is_reported_not_fatal(report, results: Path) -> None:
    (results / "bm25_engines.json").write_text("{not json")
    _write(results, "retrieval_latency.json", {"results": "unexpected"})
    md, _ = report.build_report(results, machine=MACHINE, date="2000-01-01")
    assert "`bm25_engines.json` could not be read" in md
    assert "## Retrieval latency vs corpus size" in md


def test_ingest_png_written_and_embedded(report, results: Path) -> None:
    md, _ = report.build_report(results, machine=MACHINE, date="2000-01-01")
    png = results / "ingest.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](ingest.png)" in md
    assert "retrieval_latency.png" not in md  # only embedded when the latency script drew it
    (results / "retrieval_latency.png").write_bytes(png.read_bytes())
    md, _ = report.build_report(results, machine=MACHINE, date="2000-01-01")
    assert "](retrieval_latency.png)" in md


def test_main_writes_readme(report, results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["--results", str(results)]) == 0
    assert (results / "README.md").is_file()
    assert "MISSED" in capsys.readouterr().out
    assert report.main(["--results", str(results / "missing")]) == 2
