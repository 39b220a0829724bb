"""``ragrig testset draft`` on the sample and on SRD 5.1 (docs/testset-lifecycle.md): how many drafts of each kind,
how many resolve, and the default config's recall@10 / nDCG@10 on them beside the hand-written test sets.

    python benchmarks/testset_drafts.py [--per-kind 25]      # needs each config's index (ragrig ingest -c ...)

Writes ``benchmarks/results/testset_lifecycle/drafts.md`` and ``drafts.json`` (and the draft files).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
OUT = ROOT / "benchmarks" / "results" / "testset_lifecycle"
CONFIGS = {"sample": None, "srd": "configs/srd.yaml"}
KINDS = ("exact-term", "header", "comparison", "multi-hop")


def ragrig(*args: str) -> None:
    p = subprocess.run([str(BIN / "ragrig"), *args, "--set", "mlflow.enabled=false"], cwd=ROOT, capture_output=True,
                       text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=3600)
    if p.returncode:
        raise SystemExit(f"ragrig {' '.join(args)}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kind", type=int, default=25)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows, data = [], {}
    for name, config in CONFIGS.items():
        c = ["-c", config] if config else []
        drafts, summary = OUT / f"{name}-drafts.yaml", OUT / f"{name}-drafts.json"
        ragrig("testset", "draft", *c, "-o", str(drafts), "--per-kind", str(args.per_kind), "--output-json",
               str(summary))
        made = json.loads(summary.read_text())
        ragrig("eval", "--no-prefect", *c, "--testset", str(drafts), "--include-drafts", "--output-json",
               str(OUT / f"{name}-drafts-eval.json"))
        ragrig("eval", "--no-prefect", *c, "--output-json", str(OUT / f"{name}-handwritten-eval.json"))
        ev = json.loads((OUT / f"{name}-drafts-eval.json").read_text())
        hand = json.loads((OUT / f"{name}-handwritten-eval.json").read_text())
        by_kind = defaultdict(list)
        for r in ev["per_query"]:
            kind = next(k for k in KINDS if r["id"].startswith(f"draft-{k}-"))
            by_kind[kind].append(r["metrics"])
        per = {k: {"n": len(v), "recall@10": sum(m["recall@10"] for m in v) / len(v),
                   "ndcg@10": sum(m["ndcg@10"] for m in v) / len(v)} for k, v in by_kind.items()}
        data[name] = {"summary": made, "drafts": {"overall": ev["overall"], "per_kind": per},
                      "handwritten": {"overall": hand["overall"], "per_tag": hand["per_tag"],
                                      "n": len(hand["per_query"])}}
        for k in KINDS:
            if k in per:
                p = per[k]
                rows.append(f"| {name} | draft: {k} | {p['n']} | {p['recall@10']:.3f} | {p['ndcg@10']:.3f} |")
        rows.append(f"| {name} | **all drafts** | {len(ev['per_query'])} | {ev['overall']['recall@10']:.3f} | "
                    f"{ev['overall']['ndcg@10']:.3f} |")
        rows.append(f"| {name} | **hand-written** ({hand['testset']}) | {len(hand['per_query'])} | "
                    f"{hand['overall']['recall@10']:.3f} | {hand['overall']['ndcg@10']:.3f} |")
        for tag in ("single-hop", "exact-term", "comparison", "multi-hop"):
            if tag in hand["per_tag"]:
                t = hand["per_tag"][tag]
                rows.append(f"| {name} | hand-written: {tag} | {int(t['n'])} | {t['recall@10']:.3f} | "
                            f"{t['ndcg@10']:.3f} |")
    md = ["| corpus | cases | n | recall@10 | nDCG@10 |", "|---|---|---:|---:|---:|", *rows, ""]
    for name, d in data.items():
        s = d["summary"]
        md.append(f"- {name}: {s['drafts']} drafts ({', '.join(f'{n} {k}' for k, n in s['per_kind'].items())}), "
                  f"{s['resolved']} resolve against {s['index']}; {s['description']}")
    (OUT / "drafts.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (OUT / "drafts.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
