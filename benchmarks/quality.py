"""The development suite: the default config over every dev set we have, one table per corpus and per kind.

    python benchmarks/quality.py                         # the default config; writes docs/quality.md too
    python benchmarks/quality.py --set K=V --label NAME  # an experiment: same suite, results/quality-NAME.json
    python benchmarks/quality.py --compare benchmarks/results/quality.json   # deltas against an earlier run

Corpora (each ingested first if its index is missing or stale, then evaluated with `ragrig eval`, so the
figures are exactly what a user gets; MLflow and ragas off):
- sample: datasets/sample + datasets/testsets/sample.yaml (ours)
- srd: the SRD 5.1 + datasets/testsets/srd.yaml (ours)
- pydantic-docs: 60 cases written independently in user language (../shared; our most honest set)
- scifact: BEIR SciFact test, 300 claims (../shared; published baselines in its SOURCE.md)

Kinds are test-case tags: paraphrase, exact-term, multi-hop, comparison, broad (a case may have several).
Defaults are chosen from the whole table, never from one set (docs/experiments.md logs every try).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = [  # (name, config relative to the repo, extra --set for that corpus)
    ("sample", "configs/default.yaml", []),
    ("srd", "configs/srd.yaml", []),
    ("pydantic-docs", "configs/pydantic-docs.yaml", []),
    ("scifact", "configs/scifact.yaml", []),
]
KINDS = ("paraphrase", "exact-term", "multi-hop", "comparison", "broad")
METRICS = ("recall@10", "ndcg@10", "mrr@10", "recall@100")
SHORT = {"recall@10": "R@10", "ndcg@10": "nDCG@10", "mrr@10": "MRR@10", "recall@100": "R@100"}


def ragrig(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("ragrig")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=ROOT)


def run_corpus(name: str, config: str, sets: list[str]) -> dict[str, Any]:
    over = [x for s in sets for x in ("--set", s)]
    t0 = time.perf_counter()
    ing = ragrig("ingest", "-c", config, "--no-prefect", "-q", *over)
    if ing.returncode != 0:
        raise SystemExit(f"quality: ingest of {name} failed:\n{ing.stderr[-2000:]}")
    ingest_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "eval.json"
        ev = ragrig("eval", "-c", config, "--no-prefect", "--set", "mlflow.enabled=false", "--set", "eval.ragas=false",
                    *over, "--output-json", str(out))
        if ev.returncode != 0:
            raise SystemExit(f"quality: eval of {name} failed:\n{ev.stderr[-2000:]}")
        report = json.loads(out.read_text())
    return summarise(name, report, ingest_s)


def summarise(name: str, report: dict[str, Any], ingest_s: float) -> dict[str, Any]:
    rows = report["per_query"]

    def mean(sub: list[dict[str, Any]]) -> dict[str, float]:
        return {m: sum(r["metrics"][m] for r in sub) / len(sub) for m in METRICS}

    kinds = {k: {"n": len(sub), **mean(sub)} for k in KINDS if (sub := [r for r in rows if k in r["tags"]])}
    return {"corpus": name, "testset": report["testset"], "index": report["index"], "n": len(rows),
            "overall": mean(rows), "kinds": kinds, "latency_ms": report.get("latency_ms", {}),
            "ingest_s": round(ingest_s, 1),
            "per_query": {r["id"]: {m: r["metrics"][m] for m in METRICS} for r in rows}}


def markdown(results: list[dict[str, Any]], before: dict[str, Any] | None, title: str) -> str:
    prev = {c["corpus"]: c for c in (before or {}).get("corpora", [])}
    lines = [f"## {title}", "", "| corpus | kind | n | " + " | ".join(SHORT[m] for m in METRICS) + " |",
             "|---|---|---:|" + "---:|" * len(METRICS)]
    for c in results:
        old = prev.get(c["corpus"])
        for kind, vals in [("overall", {"n": c["n"], **c["overall"]}), *c["kinds"].items()]:
            was = (old["overall"] if kind == "overall" else old["kinds"].get(kind)) if old else None
            cells = []
            for m in METRICS:
                cell = f"{vals[m]:.3f}"
                if was is not None and m in was:
                    cell += f" ({vals[m] - was[m]:+.3f})"
                cells.append(f"**{cell}**" if kind == "overall" else cell)
            lines.append(f"| {c['corpus'] if kind == 'overall' else ''} | {kind} | {vals['n']} | " + " | ".join(cells) + " |")
    lines += ["", "| corpus | index | latency p50 / p99 ms | p99 / p50 |", "|---|---|---:|---:|"]
    for c in results:
        lat = c["latency_ms"]
        if lat:
            lines.append(f"| {c['corpus']} | {c['index']['key']}@{c['index']['version']} | {lat['p50']:.1f} / "
                         f"{lat['p99']:.1f} | {lat['p99'] / max(lat['p50'], 1e-9):.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="sets", action="append", default=[], help="a config override for every corpus")
    ap.add_argument("--label", default="", help="name of an experiment (writes results/quality-LABEL.json only)")
    ap.add_argument("--only", action="append", default=[], help="run only these corpora (repeatable)")
    ap.add_argument("--compare", default=None, help="an earlier quality JSON: show deltas against it")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results = []
    for name, config, sets in SUITE:
        if args.only and name not in args.only:
            continue
        if not (ROOT / config).is_file():
            raise SystemExit(f"quality: {config} not found")
        print(f"quality: {name} ...", file=sys.stderr, flush=True)
        results.append(run_corpus(name, config, [*sets, *args.sets]))
    before = json.loads(Path(args.compare).read_text()) if args.compare else None
    payload = {"label": args.label or "default", "sets": args.sets, "machine": f"{platform.machine()}, "
               f"{os.cpu_count()} CPUs", "created": time.strftime("%Y-%m-%d %H:%M"), "corpora": results}
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / (f"quality-{args.label}.json" if args.label else "quality.json")
    out.write_text(json.dumps(payload, indent=1) + "\n")
    title = f"Quality: {args.label}" if args.label else "Quality of the default config"
    if args.sets:
        title += " (" + ", ".join(args.sets) + ")"
    table = markdown(results, before, title)
    print(table)
    if not args.label and not args.only:
        doc = ROOT / "docs" / "quality.md"
        head = doc.read_text().split("<!-- table -->")[0] if doc.exists() else "# Retrieval quality\n\n<!-- table -->"
        doc.write_text(head.rstrip() + "\n\n<!-- table -->\n" + table)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
