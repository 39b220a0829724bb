"""Multi-hop retrieval quality: recall@10 and nDCG@10 with max_hops 0, 1 and 2, for the cases tagged
multi-hop and for the single-hop ones separately, on each config's test sets (same index, same run).

    python benchmarks/multihop_eval.py configs/default.yaml configs/srd.yaml

Needs the indexes published (`ragrig ingest -c CONFIG`). Writes benchmarks/results/multihop.json.
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


def main(argv: list[str]) -> int:
    from ragrig.configs.load import load_config
    from ragrig.eval.evaluate import evaluate
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.search.retriever import Retriever

    configs = argv or [str(ROOT / "configs" / "default.yaml")]
    rows = []
    for path in configs:
        cfg = load_config(path, ["eval.ragas=false"])
        retriever = Retriever(cfg)
        for tsp in cfg.eval.testsets:
            ts = load_testset(tsp)
            for hops in (0, 1, 2):
                rep = evaluate(cfg, ts, retriever, max_hops=hops)
                for tag in ("multi-hop", "single-hop"):
                    v = rep.per_tag.get(tag)
                    if v:
                        rows.append({"testset": ts.name, "tag": tag, "n": int(v["n"]), "max_hops": hops,
                                     "recall@10": v["recall@10"], "ndcg@10": v["ndcg@10"]})
                rows.append({"testset": ts.name, "tag": "overall", "n": len(ts.cases), "max_hops": hops,
                             "recall@10": rep.overall["recall@10"], "ndcg@10": rep.overall["ndcg@10"]})
    out = ROOT / "benchmarks" / "results" / "multihop.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print("| test set | cases | n | max_hops | recall@10 | nDCG@10 |")
    print("|---|---|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: (r["testset"], r["tag"], r["max_hops"])):
        print(f"| {r['testset']} | {r['tag']} | {r['n']} | {r['max_hops']} | {r['recall@10']:.3f} | {r['ndcg@10']:.3f} |")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
