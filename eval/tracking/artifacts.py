"""The files attached to an evaluation's MLflow run: per_query.csv (with each case's hop diagnostics),
config.yaml, report.json (the whole report, so ``ragrig compare`` and ``ragrig gate`` can take a run as input),
failed_cases.md, testset_check.md (when the evaluation ran the stale-case check) and, unless a sweep child, two
plots. Every text goes through the secret scrubbing first."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.eval.hop_diagnostics import hop_summary
from ragrig.eval.lifecycle.check import to_markdown as check_markdown
from ragrig.eval.metrics import COMPARED
from ragrig.eval.report import EvalReport
from ragrig.eval.tracking.secrets import scrub

PER_QUERY_COLUMNS = ("id", "query", "tags", *COMPARED, "latency_ms", "missed@10", "hops")


def per_query_rows(report: EvalReport, secrets: list[str]) -> list[dict[str, Any]]:
    return [{"id": r["id"], "query": scrub(r["query"], secrets), "tags": ",".join(r["tags"]),
             **{k: r["metrics"][k] for k in COMPARED},
             "latency_ms": r["latency_ms"], "missed@10": "; ".join(r["missed@10"]),
             "hops": scrub(hop_summary(r.get("hops", [])), secrets)}
            for r in report.per_query]


def local_dir(artifact_uri: str) -> Path | None:
    """The folder behind a local artifact URI (file:// or a plain path), else None (a remote store)."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(url2pathname(parsed.path))
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return Path(artifact_uri)
    return None


def failed_cases_markdown(report: EvalReport) -> str:
    """Each case that missed an expected section in the top 10, with its top 5 (``*`` marks relevant)."""
    buf = io.StringIO()
    for r in report.per_query:
        if not r["missed@10"]:
            continue
        buf.write(f"## {r['id']}: {r['query']}\nmissed@10: {', '.join(r['missed@10'])}\n")
        for h in r["top"][:5]:
            buf.write(f"  {h['rank']}. {'*' if h['relevant'] else ' '} {h['header']} ({h['chunk_id']})\n")
        buf.write("\n")
    return buf.getvalue() or "no failed cases\n"


def write_artifacts(t: Path, cfg: RagrigConfig, report: EvalReport, secrets: list[str], plots: bool) -> None:
    """per_query.csv, config.yaml, report.json, failed_cases.md (and the two plots) into folder ``t``."""
    import csv

    with (t / "per_query.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=PER_QUERY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(per_query_rows(report, secrets))
    (t / "config.yaml").write_text(scrub(cfg.to_yaml(), secrets), encoding="utf-8")
    # not ASCII-escaped: a secret with non-ASCII characters must appear as itself for scrub to find it
    (t / "report.json").write_text(scrub(json.dumps(report.to_dict(), ensure_ascii=False), secrets), encoding="utf-8")
    (t / "failed_cases.md").write_text(scrub(failed_cases_markdown(report), secrets), encoding="utf-8")
    if report.testset_check is not None:
        (t / "testset_check.md").write_text(scrub(check_markdown([report.testset_check]), secrets), encoding="utf-8")
    if plots:  # sweep children skip them: the parent run has the sweep's plots
        from ragrig.eval.tracking.plots import per_tag_png, recall_ndcg_png

        recall_ndcg_png(report, t / "recall_ndcg_at_k.png")
        per_tag_png(report, t / "per_tag.png")
