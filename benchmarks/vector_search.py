"""Exact vs approximate vector search at 10k / 100k / 1M chunks: the table behind index.vector_search's
``exact_max_chunks`` (docs/determinism.md).

For each size, on the synthetic topic-clustered 384-d vectors of retrieval_latency.py (unit rows) and 200 of its
queries, one query at a time at ragrig's candidate depth (100), interleaved query by query so machine load hits
every method alike:
- exact: ``ExactSearch`` (one matrix product over the stored vectors)
- hnsw: ``HnswSearch`` (usearch, one build thread, rescored exactly): build time, latency, recall@10 / @100
  against exact, and whether a second build answers identically
- chroma: a Chroma collection as ragrig builds it (cosine HNSW): build time, latency, recall, and the share of
  top-10 lists two builds agree on (sizes up to --chroma-max only: its build is the slowest part)
- float16: the share of exact top-10 lists unchanged when the stored vectors are rounded to float16

    python benchmarks/vector_search.py [--sizes 10000 100000 1000000] [--queries 200] [--chroma-max 100000]

Prints a Markdown table, writes benchmarks/results/vector_search.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from retrieval_latency import GENERATOR, _topics, synthetic_queries, synthetic_vectors  # noqa: E402

from ragrig.configs.models import HnswConfig  # noqa: E402
from ragrig.retrieval.index import hnsw  # noqa: E402
from ragrig.retrieval.index.vectors import unit_rows  # noqa: E402
from ragrig.retrieval.search.vector_search import ExactSearch, HnswSearch  # noqa: E402

DEPTH = 100


def pct(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"p50": round(float(np.percentile(a, 50)), 3), "p95": round(float(np.percentile(a, 95)), 3)}


def recall(found: list[np.ndarray], truth: list[np.ndarray], k: int) -> float:
    return round(float(np.mean([len(set(f[:k].tolist()) & set(t[:k].tolist())) / k for f, t in zip(found, truth)])),
                 4)


def same_lists(a: list[np.ndarray], b: list[np.ndarray], k: int = 10) -> float:
    return round(float(np.mean([np.array_equal(x[:k], y[:k]) for x, y in zip(a, b)])), 4)


def chroma_build(vecs: np.ndarray, where: str) -> tuple[Any, float]:
    import chromadb
    from chromadb.config import Settings
    from ragrig.retrieval.index import chroma

    client = chromadb.PersistentClient(path=where, settings=Settings(anonymized_telemetry=False))
    t0 = time.perf_counter()
    col = chroma.create_collection(client, "bench-vectors", vecs.shape[1])
    ids = [f"{i:08d}" for i in range(len(vecs))]
    for i in range(0, len(vecs), 5000):
        col.add(ids=ids[i : i + 5000], embeddings=vecs[i : i + 5000])
    return col, time.perf_counter() - t0


def chroma_query(col: Any, q: np.ndarray) -> np.ndarray:
    res = col.query(query_embeddings=q[None, :], n_results=DEPTH, include=["distances"])
    return np.asarray([int(i) for i in res["ids"][0]], dtype=np.int64)


def measure(n: int, count: int, chroma_max: int, threads_above: int, hnsw_max: int) -> dict[str, Any]:
    rng = np.random.default_rng(GENERATOR["seed"])
    centroids, _, topic_of = _topics(n, rng)
    vecs = unit_rows(synthetic_vectors(n, rng, centroids, topic_of))
    _, qvecs = synthetic_queries(n, count)
    qvecs = unit_rows(qvecs)
    out: dict[str, Any] = {"chunks": n, "queries": count, "depth": DEPTH}
    exact = ExactSearch(vecs)
    cfg = HnswConfig()
    threads = 1 if n <= threads_above else 0  # 0: every core (not deterministic; labelled in the table)
    approx = None
    if n <= hnsw_max:
        t0 = time.perf_counter()
        graph = hnsw.build(vecs, cfg, threads=threads)
        out["hnsw_build_s"] = round(time.perf_counter() - t0, 1)
        out["hnsw_build_threads"] = "1" if threads == 1 else "all"
        approx = HnswSearch(vecs, [graph], cfg.expansion_search)
    col = None
    if n <= chroma_max:
        col, secs = chroma_build(vecs, tempfile.mkdtemp(prefix="ragrig-bench-chroma-"))
        out["chroma_build_s"] = round(secs, 1)
    times: dict[str, list[float]] = {"exact": [], "hnsw": [], "chroma": []}
    found: dict[str, list[np.ndarray]] = {"exact": [], "hnsw": [], "chroma": []}
    for q in qvecs:
        for name in ("exact", "hnsw", "chroma"):
            if (name == "chroma" and col is None) or (name == "hnsw" and approx is None):
                continue
            t0 = time.perf_counter()
            rows = chroma_query(col, q) if name == "chroma" else (exact if name == "exact" else approx).search(
                q[None, :], DEPTH, None)[0][0]
            times[name].append((time.perf_counter() - t0) * 1000)
            found[name].append(rows)
    for name in ("exact", "hnsw", "chroma"):
        if times[name]:
            out[name] = {"latency_ms": pct(times[name])}
            if name != "exact":
                out[name].update({"recall@10": recall(found[name], found["exact"], 10),
                                  "recall@100": recall(found[name], found["exact"], 100)})
    if approx is not None:
        out["hnsw_over_exact_p50"] = round(out["hnsw"]["latency_ms"]["p50"] / out["exact"]["latency_ms"]["p50"], 3)
    if approx is not None and n <= 100_000 and threads == 1:  # a second build of each: does it answer the same?
        again = HnswSearch(vecs, [hnsw.build(vecs, cfg)], cfg.expansion_search)
        out["hnsw"]["rebuild_same_top10"] = same_lists([again.search(q[None, :], DEPTH, None)[0][0] for q in qvecs],
                                                       found["hnsw"])
        if col is not None:
            col2, _ = chroma_build(vecs, tempfile.mkdtemp(prefix="ragrig-bench-chroma-"))
            out["chroma"]["rebuild_same_top10"] = same_lists([chroma_query(col2, q) for q in qvecs], found["chroma"])
    half = ExactSearch(vecs.astype(np.float16).astype(np.float32))
    out["float16_same_top10"] = same_lists([half.search(q[None, :], 10, None)[0][0] for q in qvecs],
                                           [f[:10] for f in found["exact"]])
    out["vectors_mb"] = {"float32": round(vecs.nbytes / 2**20, 1), "float16": round(vecs.nbytes / 2**21, 1)}
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| chunks | exact p50 / p95 ms | hnsw p50 / p95 ms | hnsw recall@10 / @100 | hnsw build s (threads) | "
             "hnsw rebuild "
             "same top-10 | chroma p50 / p95 ms | chroma recall@10 | chroma build s | chroma rebuild same top-10 | "
             "float16 same top-10 |", "|" + "---|" * 11]
    for r in rows:
        c, h = r.get("chroma", {}), r.get("hnsw")
        lines.append(
            f"| {r['chunks']:,} | {r['exact']['latency_ms']['p50']} / {r['exact']['latency_ms']['p95']} | "
            + (f"{h['latency_ms']['p50']} / {h['latency_ms']['p95']} | {h['recall@10']} / {h['recall@100']} | "
               f"{r['hnsw_build_s']} ({r.get('hnsw_build_threads', '1')}) | {h.get('rebuild_same_top10', '-')} | "
               if h else "not built | - | - | - | ")
            + (f"{c['latency_ms']['p50']} / {c['latency_ms']['p95']} | {c['recall@10']} | {r['chroma_build_s']} | "
               f"{c.get('rebuild_same_top10', '-')} | " if c else "- | - | - | - | ")
            + f"{r['float16_same_top10']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--chroma-max", type=int, default=100_000)
    ap.add_argument("--threads-above", type=int, default=10**9,
                    help="build the HNSW graph with every core above this size (ragrig itself always uses one: "
                         "deterministic); for measuring search on sizes whose single-thread build takes hours here")
    ap.add_argument("--hnsw-max", type=int, default=10**9, help="no HNSW graph above this size")
    ap.add_argument("--merge", type=Path, default=None, help="add these rows to an earlier JSON of this script")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "vector_search.json")
    args = ap.parse_args()
    rows = json.loads(args.merge.read_text())["results"] if args.merge else []
    for n in args.sizes:
        rows.append(measure(n, args.queries, args.chroma_max, args.threads_above, args.hnsw_max))
        print(json.dumps(rows[-1]), flush=True)
    rows.sort(key=lambda r: r["chunks"])
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "results": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
