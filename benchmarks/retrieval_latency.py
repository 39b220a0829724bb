"""Query latency per stage (embed, BM25, vector, fuse, shape) from SciFact (5k docs) up to 1M synthetic chunks.

* SciFact uses the published index of configs/scifact.yaml in the ragrig home (run `ragrig ingest -c
  configs/scifact.yaml` first; skipped, with the reason, when absent) and its 300 real test queries.
* Synthetic indexes (default 100k and 1M chunks) are built by the real IngestPipeline.build (chunks table,
  bm25s index, Chroma HNSW collection) from a topic model: each chunk belongs to one of many topics; its text
  mixes the topic's words with Zipf-distributed background words, and its vector is the topic centroid plus
  noise. Queries are words from a chunk plus a noisy copy of its vector, so both retrievers see the kind of
  structure real embeddings and real text have (uniformly random vectors are a pathological case for HNSW).
  The embed stage is always real: the embedding model encodes each query's text.
* Each size runs in its own child processes (one builds, one queries), so "peak RSS" is per size and per
  phase, not the maximum over everything before it. Built synthetic indexes are kept under
  <home>/bench-scale/ and reused while the generator parameters are unchanged (`--rebuild` to force).
* rank-bm25 (the engine ragrig does not use; see benchmarks/bm25_engines.py) is timed on the same tokens at
  sizes up to --rank-bm25-max; above that it would need ~5 GB of Python dicts per million chunks and ~1 s
  per query, so it is reported as skipped.

Writes benchmarks/results/retrieval_latency.json and retrieval_latency.png (log-log latency vs size) and
prints a Markdown table.

    python benchmarks/retrieval_latency.py [--sizes 100000 1000000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
STAGES = ("embed", "bm25", "vector", "fuse", "shape", "total", "hybrid_no_embed")
GENERATOR = {"version": 2, "dim": 384, "vocab": 50000, "words": 120, "topic_words": 300, "topic_share": 0.3,
             "noise": 1.2, "chunks_per_topic": 200, "seed": 0}
GOALS_MS = {100_000: 10.0, 1_000_000: 50.0}  # issue 9: hybrid excluding query embedding, p50
OUT = ROOT / "benchmarks" / "results"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float]) -> dict[str, float]:
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95))}


# ---- synthetic data ------------------------------------------------------------------------------------
def _topics(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = GENERATOR
    n_topics = max(1, n // g["chunks_per_topic"])
    centroids = rng.standard_normal((n_topics, g["dim"])).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    topic_vocab = rng.integers(200, g["vocab"], size=(n_topics, g["topic_words"]))
    topic_of = rng.integers(0, n_topics, size=n)
    return centroids, topic_vocab, topic_of


def synthetic_vectors(n: int, rng: np.random.Generator, centroids: np.ndarray, topic_of: np.ndarray) -> np.ndarray:
    g = GENERATOR
    out = np.empty((n, g["dim"]), dtype=np.float32)
    step = 100_000
    for i in range(0, n, step):
        part = rng.standard_normal((min(step, n - i), g["dim"])).astype(np.float32) * (g["noise"] / np.sqrt(g["dim"]))
        part += centroids[topic_of[i : i + step]]
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        out[i : i + step] = part
    return out


def synthetic_words(n: int, rng: np.random.Generator, topic_vocab: np.ndarray, topic_of: np.ndarray) -> np.ndarray:
    g = GENERATOR
    p = 1.0 / np.arange(1, g["vocab"] + 1) ** 1.1
    p /= p.sum()
    words = rng.choice(g["vocab"], size=(n, g["words"]), p=p).astype(np.int32)
    k = int(g["words"] * g["topic_share"])
    pick = rng.integers(0, g["topic_words"], size=(n, k))
    words[:, :k] = topic_vocab[topic_of[:, None], pick]
    return words


def build(n: int, home: Path, sets: list[str] | None = None) -> dict[str, Any]:
    """Child process: build and publish the synthetic index of n chunks under home (reused when current), with
    ``sets`` (more config settings, e.g. ``index.vector_search.mode=exact``: no graph) on top."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.documents import Chunk, Document, sha256_text
    from ragrig.retrieval.embedding import model_id
    from ragrig.retrieval.ingest.build import build_version
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.ingest.vector_rows import as_rows

    stamp = home / "generator.json"
    made = {**GENERATOR, "n": n, **({"sets": sets} if sets else {})}
    if stamp.is_file() and json.loads(stamp.read_text()) == made:
        return {"reused": True, **json.loads((home / "build.json").read_text())}
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    os.environ["RAGRIG_HOME"] = str(home)
    (home / "corpus").mkdir(parents=True, exist_ok=True)
    cfg = load_config(None, [f"corpus.path={home / 'corpus'}", f"index.name=synthetic-{n}", "retrieval.synonyms=null",
                             "eval.testsets=[]", "index.keep_versions=1", "retrieval.fusion.weights.vector2=0",
                             *(sets or [])])
    t0 = time.perf_counter()
    rng = np.random.default_rng(GENERATOR["seed"])
    centroids, topic_vocab, topic_of = _topics(n, rng)
    words = synthetic_words(n, rng, topic_vocab, topic_of)
    vecs = synthetic_vectors(n, rng, centroids, topic_of)
    docs, chunks = [], []
    per_doc = 20
    for i in range(n):
        did = f"doc{i // per_doc}.md"
        if i % per_doc == 0:
            docs.append(Document(doc_id=did, sha256=sha256_text(did), format="md", markdown="", metadata={}))
        body = " ".join(f"w{w}" for w in words[i])
        text = f"## Section {i}\n\n{body}"
        search = f"Section {i}\n{body}"
        chunks.append(Chunk(chunk_id=f"{did}#{i % per_doc}", doc_id=did, header_path=[f"Section {i}"], level=2,
                            start=0, end=len(text), text=text, search_text=search, sha256=sha256_text(search),
                            tokens=150))
    generate_s = time.perf_counter() - t0
    pipe = IngestPipeline(cfg)
    pipe.embedder.id = model_id(cfg.embedding)
    t0 = time.perf_counter()
    with pipe.timed("index"):  # the pipeline's build step on rows in memory (an ingest's come from its tables)
        version = build_version(cfg, pipe.layout, docs, chunks, as_rows(vecs, GENERATOR["dim"]),
                                model_id=pipe.embedder.id, dim=GENERATOR["dim"], corpus_kind="directory",
                                mark=pipe.clock.mark)
    pipe.publish(version)
    info = {"generate_s": generate_s, "build_s": time.perf_counter() - t0, "stages_s": dict(pipe.stats.seconds),
            "build_peak_rss_mb": peak_rss_mb(), "disk_mb": _du_mb(home)}
    (home / "build.json").write_text(json.dumps(info))
    stamp.write_text(json.dumps(made))
    return {"reused": False, **info}


def _du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def synthetic_queries(n: int, count: int) -> tuple[list[str], np.ndarray]:
    """Query texts (4 topic words + 2 words of a target chunk) and vectors (the chunk's vector plus noise)."""
    rng = np.random.default_rng(GENERATOR["seed"])
    centroids, topic_vocab, topic_of = _topics(n, rng)
    qrng = np.random.default_rng(12345)
    targets = qrng.integers(0, n, size=count)
    texts, vecs = [], []
    for t in targets:
        topic = topic_of[t]
        picked = qrng.choice(topic_vocab[topic], size=6, replace=False)
        texts.append(" ".join(f"w{w}" for w in picked))
        v = centroids[topic] + qrng.standard_normal(GENERATOR["dim"]).astype(np.float32) * (1.4 / np.sqrt(GENERATOR["dim"]))
        vecs.append(v / np.linalg.norm(v))
    return texts, np.asarray(vecs, dtype=np.float32)


# ---- measuring -----------------------------------------------------------------------------------------
def one(retriever: Any, q: str, qvec: np.ndarray | None) -> Any:
    """One query through the pipeline (a batch of one, no cache, no hops); a synthetic index's query vector is
    handed in through the candidate memo, as a precomputed vector would be."""
    from ragrig.retrieval.search.memo import CandidateMemo

    memo = CandidateMemo()
    if qvec is not None:
        memo.vectors[(None, retriever.processor_for(retriever.cfg.retrieval).process(q).text)] = qvec
    return retriever.search_many([q], max_hops=[0], memo=memo)[0]


def measure(retriever: Any, texts: list[str], qvecs: np.ndarray | None) -> dict[str, dict[str, float]]:
    """Per-stage p50/p95 of single-query search; the embed stage is the real model on the query text."""
    per: dict[str, list[float]] = {s: [] for s in STAGES}
    for i, q in enumerate(texts[:10]):  # warm-up
        one(retriever, q, None if qvecs is None else qvecs[i])
    for i, q in enumerate(texts):
        t0 = time.perf_counter()
        retriever.embedder.encode_queries([q])
        embed = (time.perf_counter() - t0) * 1000
        res = one(retriever, q, None if qvecs is None else qvecs[i])
        t = res.timings_ms
        no_embed = t["total"] - t.get("embed", 0.0)
        t = {**t, "embed": embed, "hybrid_no_embed": no_embed, "total": no_embed + embed}
        for s in STAGES:
            per[s].append(t.get(s, 0.0))
    return {s: pct(v) for s, v in per.items()}


def rank_bm25_latency(retriever: Any, texts: list[str], k: int) -> dict[str, float]:
    from rank_bm25 import BM25Okapi

    tok = retriever.sources.bm25_index.tokenizer
    t0 = time.perf_counter()
    okapi = BM25Okapi([tok(c.search_text) for c in retriever.chunks], k1=retriever.cfg.index.bm25.k1,
                      b=retriever.cfg.index.bm25.b)
    build_s = time.perf_counter() - t0
    lat = []
    for q in texts[:100]:
        toks = tok(q)
        t0 = time.perf_counter()
        s = okapi.get_scores(toks)
        top = np.argpartition(-s, min(k, len(s) - 1))[:k]
        top[np.argsort(-s[top], kind="stable")]
        lat.append((time.perf_counter() - t0) * 1000)
    return {"build_s": build_s, **pct(lat)}


def query(name: str, home: str, n: int, count: int, rank_bm25_max: int) -> dict[str, Any]:
    """Child process: open the index and time single queries per stage."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.search.retriever import Retriever

    os.environ["RAGRIG_HOME"] = home
    if name == "scifact":
        from ragrig.eval.testset import load_testset

        cfg = load_config(str(ROOT / "configs" / "scifact.yaml"))
        texts = [c.query for c in load_testset(cfg.eval.testsets[0]).cases][:count]
        qvecs = None
    else:
        cfg = load_config(None, [f"corpus.path={Path(home) / 'corpus'}", f"index.name=synthetic-{n}",
                                 "retrieval.synonyms=null", "eval.testsets=[]", "index.keep_versions=1",
                                 "retrieval.fusion.weights.vector2=0"])
        texts, qvecs = synthetic_queries(n, count)
    t0 = time.perf_counter()
    r = Retriever(cfg)
    open_s = time.perf_counter() - t0
    out: dict[str, Any] = {"index": name, "chunks": len(r.chunks), "queries": len(texts), "open_s": open_s,
                           "candidates": cfg.retrieval.candidates, "stages_ms": measure(r, texts, qvecs),
                           "query_peak_rss_mb": peak_rss_mb()}
    if len(r.chunks) <= rank_bm25_max:
        out["rank_bm25_ms"] = rank_bm25_latency(r, texts, cfg.retrieval.candidates)
    else:
        out["rank_bm25_ms"] = {"skipped": f"over --rank-bm25-max {rank_bm25_max}: BM25Okapi keeps a Python dict "
                                          "per chunk (~5 GB per million) and scores every chunk per query"}
    return out


def child(argv: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, __file__, *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(results, key=lambda r: r["chunks"])
    xs = [r["chunks"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for stage, style in (("hybrid_no_embed", "o-"), ("vector", "s--"), ("bm25", "^--"), ("fuse", "v:"),
                         ("shape", "d:"), ("embed", "x-.")):
        ax.plot(xs, [r["stages_ms"][stage]["p50"] for r in rows], style, label=f"{stage} p50")
    rb = [(r["chunks"], r["rank_bm25_ms"]["p50"]) for r in rows if "p50" in r["rank_bm25_ms"]]
    if rb:
        ax.plot(*zip(*rb), "k^-", alpha=0.5, label="rank-bm25 p50 (not used)")
    for n, goal in GOALS_MS.items():
        ax.plot([n], [goal], "r*", markersize=12)
    ax.plot([], [], "r*", label="goal: hybrid excl. embed p50")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the index")
    ax.set_ylabel("ms per query (p50)")
    ax.set_title(f"ragrig retrieval latency vs corpus size ({os.cpu_count()} CPUs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(results: list[dict[str, Any]]) -> str:
    head = ["index", "chunks", *(f"{s} p50 / p95 ms" for s in STAGES), "rank-bm25 p50 ms", "goal (excl. embed, p50)",
            "build s", "peak RSS build / query MB"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in sorted(results, key=lambda x: x["chunks"]):
        st, rb, b = r["stages_ms"], r["rank_bm25_ms"], r.get("build", {})
        goal = GOALS_MS.get(r["chunks"])
        verdict = "–" if goal is None else f"≤ {goal:g} ms: {'met' if st['hybrid_no_embed']['p50'] <= goal else 'MISSED'}"
        cells = [r["index"], f"{r['chunks']:,}", *(f"{st[s]['p50']:.2f} / {st[s]['p95']:.2f}" for s in STAGES),
                 f"{rb['p50']:.1f}" if "p50" in rb else "skipped", verdict,
                 f"{b['build_s']:.0f}" if b else "–",
                 f"{b['build_peak_rss_mb']:.0f} / {r['query_peak_rss_mb']:.0f}" if b else f"– / {r['query_peak_rss_mb']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] in ("_build", "_query"):
        if sys.argv[1] == "_build":
            res = build(int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
        else:
            res = query(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
        print(json.dumps(res))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rank-bm25-max", type=int, default=100_000)
    ap.add_argument("--home", default=os.environ.get("RAGRIG_HOME", str(ROOT / ".ragrig")),
                    help="ragrig home holding the SciFact index; synthetic indexes go under <home>/bench-scale")
    ap.add_argument("--rebuild", action="store_true", help="rebuild synthetic indexes even if current")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    try:
        res = child(["_query", "scifact", args.home, "0", str(args.queries), str(args.rank_bm25_max)])
        results.append(res)
        print(f"scifact: {res['chunks']} chunks, hybrid excl. embed p50 {res['stages_ms']['hybrid_no_embed']['p50']:.2f} ms",
              flush=True)
    except RuntimeError as exc:  # no ../shared or no SciFact index: say so, go on
        skipped["scifact"] = str(exc).splitlines()[-1]
        print(f"scifact skipped: {skipped['scifact']}", flush=True)
    for n in args.sizes:
        home = Path(args.home) / "bench-scale" / str(n)
        if args.rebuild:
            import shutil

            shutil.rmtree(home, ignore_errors=True)
        print(f"synthetic-{n}: building (or reusing) under {home} ...", flush=True)
        b = child(["_build", str(n), str(home)])
        print(f"synthetic-{n}: build {b['build_s']:.0f} s{' (reused)' if b['reused'] else ''}, "
              f"peak RSS {b['build_peak_rss_mb']:.0f} MB; querying ...", flush=True)
        res = child(["_query", f"synthetic-{n}", str(home), str(n), str(args.queries), str(args.rank_bm25_max)])
        res["build"] = b
        results.append(res)
    doc = {"cpus": os.cpu_count(), "generator": GENERATOR, "goals_ms": {str(k): v for k, v in GOALS_MS.items()},
           "skipped": skipped, "results": results}
    (out_dir / "retrieval_latency.json").write_text(json.dumps(doc, indent=2) + "\n")
    md = table(results)
    (out_dir / "retrieval_latency.md").write_text(md + "\n")
    if results:
        plot(results, out_dir / "retrieval_latency.png")
    print(md)
    print(f"wrote {out_dir / 'retrieval_latency.json'}, .md, .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
