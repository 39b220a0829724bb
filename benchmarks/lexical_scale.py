"""The lexical index at scale: ragrig's BM25 (bm25s) in one piece and in shards vs Tantivy, on synthetic chunks.

For each size and engine, one child process generates the same synthetic chunk texts (retrieval_latency.py's
generator: Zipf background words plus topic words, 120 words a chunk), builds the index, saves it, then drops
it and opens it from disk and answers the same queries (top 100). Measured: build seconds (tokenising
included), save seconds, disk MiB, the build's peak RSS above the generated corpus, the RSS an opened index
adds, query p50/p95 (tokenising and top-100 included) and, against ragrig in one piece, the top-10 overlap
and whether the ranking is identical (ids and order of the top 100).

* ``ragrig-1``: ``Bm25Index`` in one piece (what every index below ``index.bm25.shard_max_chunks`` is).
* ``ragrig-S``: the same index in S shards built in one process (``index.bm25.shards: S``).
* ``shard-apart-S``: what one worker of a distributed build would do: corpus statistics in one streaming pass
  (tokens dropped as it goes), then shard 0 of S from its rows only; its peak RSS is one worker's.
* ``tantivy``: the ``tantivy`` package (not a ragrig dependency; ``pip install -c constraints.txt tantivy``),
  same texts, its default tokenizer (the synthetic words are already lowercase alphanumeric, so it sees the
  tokens ragrig sees), BM25 k1 1.2 b 0.75 as ragrig's default, writer with 2 threads and a 512 MB heap;
  skipped with the reason when not installed.

    python benchmarks/lexical_scale.py [--sizes 100000 1000000] [--shards 4] [--queries 200]

Writes benchmarks/results/lexical_scale.json and prints a Markdown table (docs/scale.md, "Lexical index").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = ROOT / "benchmarks" / "results" / "lexical_scale.json"


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def corpus(n: int) -> list[str]:
    from retrieval_latency import GENERATOR, _topics, synthetic_words

    rng = np.random.default_rng(GENERATOR["seed"])
    _, topic_vocab, topic_of = _topics(n, rng)
    words = synthetic_words(n, rng, topic_vocab, topic_of)
    return [" ".join(f"w{w}" for w in row) for row in words]


def queries(n: int, count: int) -> list[str]:
    """Words of real chunks (3-8 of them, so BM25 has something to rank) plus a background word."""
    rng = np.random.default_rng(7)
    texts = corpus(min(n, 20_000))
    out = []
    for i in rng.integers(0, len(texts), size=count):
        words = texts[i].split()
        out.append(" ".join(rng.choice(words, size=int(rng.integers(3, 9)), replace=False)) + f" w{rng.integers(50)}")
    return out


def _time_queries(search: Any, qs: list[str]) -> tuple[dict[str, float], list[list[int]]]:
    lat, runs = [], []
    for q in qs:
        t0 = time.perf_counter()
        rows = search(q)
        lat.append((time.perf_counter() - t0) * 1000)
        runs.append(rows)
    return {"p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95))}, runs


def run_ragrig(n: int, shards: int, qs: list[str], work: Path) -> dict[str, Any]:
    from ragrig.configs.models import Bm25Config
    from ragrig.retrieval.index.bm25 import Bm25Index

    texts = corpus(n)
    cfg = Bm25Config(shards=shards)
    Bm25Index.build(texts[:50], cfg)  # imports and first-use costs out of the measured build
    gc.collect()
    base = rss_mb()
    t0 = time.perf_counter()
    index = Bm25Index.build(texts, cfg)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index.save(work / "bm25")
    save_s = time.perf_counter() - t0
    build_peak = peak_mb() - base
    del index, texts
    gc.collect()
    before = rss_mb()
    t0 = time.perf_counter()
    index = Bm25Index.load(work / "bm25", cfg)
    load_s = time.perf_counter() - t0
    lat, runs = _time_queries(lambda q: [r for r, _ in index.search(index.tokenizer(q), 100)], qs)
    return {"build_s": build_s, "save_s": save_s, "load_s": load_s, "build_peak_mb": build_peak,
            "open_mb": rss_mb() - before, "disk_mb": du_mb(work / "bm25"), **lat, "runs": runs}


def run_shard_apart(n: int, shards: int, work: Path) -> dict[str, Any]:
    from ragrig.configs.models import Bm25Config
    from ragrig.retrieval.index.bm25 import tokenizer_for
    from ragrig.retrieval.index.bm25_shards import TermStats, build_shard, shard_bounds

    texts = corpus(n)
    cfg = Bm25Config(shards=shards)
    tok = tokenizer_for(cfg)
    build_shard([tok(t) for t in texts[:50]], TermStats.of(tok(t) for t in texts[:50]), cfg)  # imports, first use
    gc.collect()
    base = rss_mb()
    t0 = time.perf_counter()
    stats = TermStats.of(tok(t) or [""] for t in texts)
    stats_s = time.perf_counter() - t0
    a, b = shard_bounds(n, shards)[0]
    t0 = time.perf_counter()
    r = build_shard([tok(t) or [""] for t in texts[a:b]], stats, cfg)
    r.save(str(work / "shard"), show_progress=False, allow_pickle=False)
    return {"stats_s": stats_s, "build_s": time.perf_counter() - t0, "build_peak_mb": peak_mb() - base,
            "disk_mb": du_mb(work / "shard"), "rows": b - a}


def run_tantivy(n: int, qs: list[str], work: Path) -> dict[str, Any]:
    import tantivy

    texts = corpus(n)
    gc.collect()
    base = rss_mb()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False)
    sb.add_integer_field("row", stored=True, indexed=False, fast=True)
    schema = sb.build()
    path = work / "tantivy"
    path.mkdir()
    t0 = time.perf_counter()
    index = tantivy.Index(schema, path=str(path))
    writer = index.writer(heap_size=512 * 2**20, num_threads=2)
    for i, t in enumerate(texts):
        writer.add_document(tantivy.Document(body=t, row=i))
    writer.commit()
    writer.wait_merging_threads()
    build_s = time.perf_counter() - t0
    build_peak = peak_mb() - base
    del writer, index, texts
    gc.collect()
    before = rss_mb()
    t0 = time.perf_counter()
    index = tantivy.Index.open(str(path))
    searcher = index.searcher()
    load_s = time.perf_counter() - t0

    def search(q: str) -> list[int]:
        hits = searcher.search(index.parse_query(q, ["body"]), 100).hits
        return [searcher.doc(addr)["row"][0] for _, addr in hits[:10]]  # ids of the top 10 (ragrig: all 100)

    lat, runs = _time_queries(search, qs)
    return {"build_s": build_s, "save_s": 0.0, "load_s": load_s, "build_peak_mb": build_peak,
            "open_mb": rss_mb() - before, "disk_mb": du_mb(path), "segments": getattr(searcher, "num_segments", None), **lat, "runs": runs}


def child(engine: str, n: int, shards: int, count: int) -> dict[str, Any]:
    qs = queries(n, count)
    with tempfile.TemporaryDirectory(prefix="lexical-", dir=os.environ.get("LEXICAL_TMP")) as tmp:
        if engine == "ragrig":
            return run_ragrig(n, shards, qs, Path(tmp))
        if engine == "shard-apart":
            return run_shard_apart(n, shards, Path(tmp))
        return run_tantivy(n, qs, Path(tmp))


def spawn(engine: str, n: int, shards: int, count: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", engine, str(n), str(shards), str(count)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000])
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        engine, n, shards, count = args.child
        print(json.dumps(child(engine, int(n), int(shards), int(count))))
        return 0
    try:
        import tantivy  # noqa: F401

        have_tantivy = True
    except ImportError:
        have_tantivy = False
    results: list[dict[str, Any]] = []
    for n in args.sizes:
        plan = [("ragrig-1", "ragrig", 1), (f"ragrig-{args.shards}", "ragrig", args.shards),
                (f"shard-apart-{args.shards}", "shard-apart", args.shards)]
        plan += [("tantivy", "tantivy", 1)] if have_tantivy else []
        rows: dict[str, dict[str, Any]] = {}
        for name, engine, shards in plan:
            t0 = time.perf_counter()
            rows[name] = spawn(engine, n, shards, args.queries)
            rows[name]["load_avg_1m"] = os.getloadavg()[0]  # the machine is shared: how busy it was
            print(f"# {n} {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        ref = rows["ragrig-1"].get("runs")
        for name, r in rows.items():
            runs = r.pop("runs", None)
            if ref and runs:
                r["top10_overlap"] = float(np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in zip(ref, runs)]))
                r["identical_top100"] = all(a == b for a, b in zip(ref, runs)) and name.startswith("ragrig")
            results.append({"chunks": n, "engine": name, **r})
        if not have_tantivy:
            results.append({"chunks": n, "engine": "tantivy", "skipped": "the tantivy package is not installed"})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cpus": os.cpu_count(), "queries": args.queries, "k": 100, "results": results},
                              indent=2) + "\n")
    print("| chunks | engine | build s | save s | build peak MiB | open MiB | disk MiB | p50 ms | p95 ms "
          "| top-10 overlap | same top 100 |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        if "skipped" in r or "error" in r:
            print(f"| {r['chunks']} | {r['engine']} | {r.get('skipped') or r.get('error')} |")
            continue

        def f(key: str, fmt: str = ".1f") -> str:
            return format(r[key], fmt) if isinstance(r.get(key), (int, float)) else "-"
        print(f"| {r['chunks']} | {r['engine']} | {f('build_s')} | {f('save_s')} | {f('build_peak_mb', '.0f')} | "
              f"{f('open_mb', '.0f')} | {f('disk_mb', '.0f')} | {f('p50_ms', '.2f')} | {f('p95_ms', '.2f')} | "
              f"{f('top10_overlap', '.3f')} | {r.get('identical_top100', '-')} |")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
