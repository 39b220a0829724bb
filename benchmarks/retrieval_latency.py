"""Query latency per stage (embed, BM25, vector, fuse, shape) on SciFact and on synthetic indexes.

SciFact uses the published index of configs/scifact.yaml in the ragrig home (run `ragrig ingest -c
configs/scifact.yaml` first; skipped when absent). Synthetic indexes are built in a temp home from
Zipf-distributed word chunks and random unit vectors (the embedding model still embeds each query,
so the embed stage is real). Peak memory is the process's max RSS after opening each index.
Writes benchmarks/results/retrieval_latency.json and prints a table.

    python benchmarks/retrieval_latency.py --sizes 200000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
STAGES = ("embed", "bm25", "vector", "fuse", "shape", "total")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(retriever, queries: list[str]) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    per: dict[str, list[float]] = {s: [] for s in STAGES}
    for q in queries[:10]:  # warm-up
        retriever.search(q, use_cache=False)
    for q in queries:
        t = retriever.search(q, use_cache=False).timings_ms
        for s in STAGES:
            per[s].append(t.get(s, 0.0))
    return {s: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95))} for s, v in per.items()}


def build_synthetic(n: int, home: Path, dim: int = 384, seed: int = 0) -> tuple[object, list[str]]:
    from configs.schema import load_config
    from retrieval.embedding import model_id
    from retrieval.ingest.pipeline import IngestPipeline
    from retrieval.types import Chunk, Document, sha256_text

    os.environ["RAGRIG_HOME"] = str(home)
    empty = home / "corpus"
    empty.mkdir(parents=True, exist_ok=True)
    cfg = load_config(None, [f"corpus.path={empty}", f"index.name=synthetic-{n}", "retrieval.synonyms=null",
                             "eval.testsets=[]"])
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50000)])
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()
    words = rng.choice(len(vocab), size=(n, 120), p=p)
    docs, chunks = [], []
    for i in range(n):
        text = f"## Section {i}\n\n" + " ".join(vocab[words[i]])
        did = f"doc{i // 20}.md"
        if i % 20 == 0:
            docs.append(Document(doc_id=did, sha256=sha256_text(did), format="md", markdown="", metadata={}))
        search = f"Section {i}\n" + text[len(f"## Section {i}\n\n"):]
        chunks.append(Chunk(chunk_id=f"{did}#{i % 20}", doc_id=did, header_path=[f"Section {i}"], level=2, start=0,
                            end=len(text), text=text, search_text=search, sha256=sha256_text(search), tokens=130))
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    pipe = IngestPipeline(cfg)
    pipe.embedder.id = model_id(cfg.embedding)
    t0 = time.perf_counter()
    version = pipe.build(docs, chunks, vecs)
    pipe.publish(version)
    build_s = time.perf_counter() - t0
    queries = [" ".join(rng.choice(vocab[50:3000], size=6)) for _ in range(200)]
    return (cfg, build_s), queries


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[200000])
    ap.add_argument("--home", default=str(ROOT / ".ragrig"), help="ragrig home holding the SciFact index")
    args = ap.parse_args()
    from configs.schema import load_config
    from retrieval.retriever import Retriever

    results = []
    os.environ["RAGRIG_HOME"] = args.home
    try:
        cfg = load_config(str(ROOT / "configs" / "scifact.yaml"))
        from eval.testset import load_testset

        ts = load_testset(cfg.eval.testsets[0])
        t0 = time.perf_counter()
        r = Retriever(cfg)
        open_s = time.perf_counter() - t0
        results.append({"index": "scifact", "chunks": len(r.chunks), "open_s": open_s,
                        "stages_ms": measure(r, [c.query for c in ts.cases]), "max_rss_mb": rss_mb()})
        del r
    except Exception as exc:  # no ../shared or no index: say so, go on
        print(f"scifact skipped: {exc}")
    for n in args.sizes:
        home = Path(tempfile.mkdtemp(prefix="ragrig-lat-"))
        (cfg, build_s), queries = build_synthetic(n, home)  # type: ignore[misc]
        t0 = time.perf_counter()
        r = Retriever(cfg)  # type: ignore[arg-type]
        open_s = time.perf_counter() - t0
        results.append({"index": f"synthetic-{n}", "chunks": n, "build_s": build_s, "open_s": open_s,
                        "stages_ms": measure(r, queries), "max_rss_mb": rss_mb()})
        del r
        shutil.rmtree(home, ignore_errors=True)
    out = ROOT / "benchmarks" / "results" / "retrieval_latency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cpus": os.cpu_count(), "results": results}, indent=2) + "\n")
    print("| index | chunks | " + " | ".join(f"{s} p50/p95 ms" for s in STAGES) + " | max RSS MB |")
    print("|---|---:|" + "---:|" * (len(STAGES) + 1))
    for res in results:
        st = res["stages_ms"]
        print(f"| {res['index']} | {res['chunks']} | " + " | ".join(f"{st[s]['p50']:.1f} / {st[s]['p95']:.1f}" for s in STAGES)
              + f" | {res['max_rss_mb']:.0f} |")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
