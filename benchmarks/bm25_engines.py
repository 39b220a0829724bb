"""BM25 engines side by side: rank-bm25 (BM25Okapi, scores every document in Python) vs bm25s (sparse
matrices), with the same tokenizer, on SciFact (quality + speed) and on synthetic corpora (speed).

Prints a table and writes benchmarks/results/bm25_engines.json. ragrig's default engine is bm25s;
this script is the evidence.

    python benchmarks/bm25_engines.py [--sizes 20000 100000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"


def ndcg10(ranked: list[str], rel: dict[str, int]) -> float:
    dcg = sum(rel.get(d, 0) / np.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def time_engines(corpus_tokens: list[list[str]], queries: list[list[str]], k: int = 100) -> dict[str, dict]:
    import bm25s
    from rank_bm25 import BM25Okapi

    out: dict[str, dict] = {}
    t0 = time.perf_counter()
    okapi = BM25Okapi(corpus_tokens, k1=1.5, b=0.75)
    build = time.perf_counter() - t0
    lat, runs = [], []
    for q in queries:
        t0 = time.perf_counter()
        s = okapi.get_scores(q)
        top = np.argsort(-s, kind="stable")[:k]
        lat.append((time.perf_counter() - t0) * 1000)
        runs.append(top.tolist())
    out["rank-bm25 (BM25Okapi)"] = {"build_s": build, "p50_ms": float(np.percentile(lat, 50)),
                                    "p95_ms": float(np.percentile(lat, 95)), "runs": runs}
    t0 = time.perf_counter()
    r = bm25s.BM25(method="robertson", k1=1.5, b=0.75)
    r.index(corpus_tokens, show_progress=False)
    build = time.perf_counter() - t0
    lat, runs = [], []
    for q in queries:
        t0 = time.perf_counter()
        known = [t for t in q if t in r.vocab_dict]
        s = r.get_scores(known) if known else np.zeros(len(corpus_tokens))
        top = np.argpartition(-s, min(k, len(s) - 1))[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        lat.append((time.perf_counter() - t0) * 1000)
        runs.append(top.tolist())
    out["bm25s (robertson)"] = {"build_s": build, "p50_ms": float(np.percentile(lat, 50)),
                                "p95_ms": float(np.percentile(lat, 95)), "runs": runs}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[20000, 100000])
    args = ap.parse_args()
    from ragrig.retrieval.tokenize import Tokenizer

    tok = Tokenizer("english", "english")
    results: dict[str, object] = {"scifact": None, "synthetic": []}
    rows = []
    if SCIFACT.is_dir():
        from ragrig.eval.testset import import_beir

        docs = [json.loads(line) for line in open(SCIFACT / "corpus.jsonl", encoding="utf-8")]
        ids = [d["_id"] for d in docs]
        corpus = [tok(d["title"] + " " + d["text"]) for d in docs]
        ts = import_beir(SCIFACT, "test")
        queries = [tok(c.query) for c in ts.cases]
        eng = time_engines(corpus, queries)
        for name, e in eng.items():
            nd = float(np.mean([ndcg10([ids[i] for i in run], {x.doc: x.grade for x in c.expect})
                                for run, c in zip(e.pop("runs"), ts.cases)]))
            e["ndcg@10"] = nd
            rows.append(("scifact", len(corpus), name, e))
        results["scifact"] = eng
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(50000)], dtype=object)
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()
    for n in args.sizes:
        ids = rng.choice(len(vocab), size=(n, 150), p=p)  # Zipf-like word frequencies
        corpus = [list(vocab[row]) for row in ids]
        queries = [list(vocab[rng.choice(np.arange(100, 5000), size=6)]) for _ in range(100)]
        eng = time_engines(corpus, queries)
        agree = np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in zip(*(e["runs"] for e in eng.values()))])
        for name, e in eng.items():
            e.pop("runs")
            e["top10_overlap"] = float(agree)
            rows.append(("synthetic", n, name, e))
        results["synthetic"].append({"docs": n, **eng})  # type: ignore[union-attr]
    out = ROOT / "benchmarks" / "results" / "bm25_engines.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print("| corpus | docs | engine | build s | p50 ms/query | p95 ms/query | nDCG@10 / top-10 overlap |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for corpus_name, n, name, e in rows:
        extra = f"{e['ndcg@10']:.4f}" if "ndcg@10" in e else f"{e['top10_overlap']:.3f}"
        print(f"| {corpus_name} | {n} | {name} | {e['build_s']:.2f} | {e['p50_ms']:.2f} | {e['p95_ms']:.2f} | {extra} |")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
