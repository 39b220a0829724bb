"""Hash each per-query table of `ragrig eval --output-json` (metrics, top hits, misses): equal before and after
a refactor means the same rankings. Usage: hash_eval.py REPORT.json [...]

Vector search is deterministic by default (docs/determinism.md), so two trees, two homes or two rebuilds compare
with no harness:

    ragrig eval -c configs/srd.yaml --no-prefect --set mlflow.enabled=false --output-json srd.json
    python benchmarks/hash_eval.py srd.json      # metrics-hash: per-query metrics; full-hash: also the top hits

(benchmarks/rebuild_gate.py computes the same two hashes for each of N rebuilds.)
"""
import hashlib, json, sys

for path in sys.argv[1:]:
    data = json.load(open(path))
    runs = data["runs"] if "runs" in data else [data]
    for r in runs:
        rows = [[q["id"], sorted(q["metrics"].items()), [(t["chunk_id"], t["score"], t["relevant"], t["hop"]) for t in q["top"]],
                 q["missed@10"], q["normalized"], q["expansions"]] for q in r["per_query"]]
        blob = json.dumps(rows, sort_keys=True).encode()
        m = hashlib.sha256(json.dumps([[x[0], x[1]] for x in rows]).encode()).hexdigest()[:16]
        print(f"{r['testset']:24s} n={len(rows):4d} ndcg@10={r['overall']['ndcg@10']:.4f} R@10={r['overall']['recall@10']:.4f} "
              f"metrics-hash={m} full-hash={hashlib.sha256(blob).hexdigest()[:16]}")
