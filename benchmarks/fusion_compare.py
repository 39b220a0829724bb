"""Single retrievers vs fusion methods on every config's test sets, one index per config, no multi-hop.

    python benchmarks/fusion_compare.py configs/default.yaml configs/srd.yaml configs/scifact.yaml

Needs the indexes published (`ragrig ingest -c CONFIG`). No weight is tuned: fusion uses equal weights.
Writes benchmarks/results/fusion_compare.json and prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

SYSTEMS = {
    "BM25 alone": ["retrieval.fusion.weights.vector=0"],
    "vector alone": ["retrieval.fusion.weights.bm25=0"],
    "RRF k=60": ["retrieval.fusion.method=rrf", "retrieval.fusion.rrf_k=60"],
    "weighted min-max": ["retrieval.fusion.method=weighted", "retrieval.fusion.normalization=minmax"],
    "weighted z-score (default)": ["retrieval.fusion.method=weighted", "retrieval.fusion.normalization=zscore"],
}


def main(argv: list[str]) -> int:
    from ragrig.configs.load import load_config
    from ragrig.eval.evaluate import evaluate
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.search.retriever import Retriever

    rows = []
    for path in argv or [str(ROOT / "configs" / "default.yaml")]:
        base = load_config(path, ["eval.ragas=false"])
        retriever = Retriever(base)
        for tsp in base.eval.testsets:
            ts = load_testset(tsp)
            for name, sets in SYSTEMS.items():
                cfg = load_config(path, ["eval.ragas=false", *sets])
                retriever.cfg = cfg
                rep = evaluate(cfg, ts, retriever, max_hops=0)
                o = rep.overall
                rows.append({"testset": ts.name, "cases": len(ts.cases), "system": name, "ndcg@10": o["ndcg@10"],
                             "recall@10": o["recall@10"], "recall@100": o["recall@100"], "mrr@10": o["mrr@10"]})
                print(f"{ts.name} {name}: nDCG@10 {o['ndcg@10']:.4f}", file=sys.stderr, flush=True)
    out = ROOT / "benchmarks" / "results" / "fusion_compare.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print("| test set | system | nDCG@10 | R@10 | R@100 | MRR@10 |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['testset']} ({r['cases']}) | {r['system']} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | "
              f"{r['recall@100']:.4f} | {r['mrr@10']:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
