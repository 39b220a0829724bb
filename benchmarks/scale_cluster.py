"""A synthetic corpus of N chunks ingested through the cluster path (``ragrig ingest --runner dask``), end to end:
the public CLI, Prefect, Dask workers that extract, chunk and embed their partitions and write shards, the
driver's merge, BM25, keywords, vectors and the publish switch. Then the published version is opened and asked
known-item queries.

Embedding N real chunks on 2 cores would take hours (~14 chunks/s, scale.json), so the model is a stand-in
behind the same interface users run large corpora with: an OpenAI-compatible embeddings endpoint
(``embedding.backend: openai``) that this script starts on 127.0.0.1 in its own process group. Its vectors are a
fixed random projection of the text's words (a bag-of-words embedding: a text's own words find it), computed
in microseconds, so the figures are everything an ingest costs *except* the model's compute; docs/scale.md adds
that from the measured per-chunk encode cost. Nothing else is stubbed.

The corpus: BEIR ``corpus.jsonl``, one document per chunk, 120 words each (retrieval_latency.py's generator:
topic + Zipf vocabulary). Vector search is ``exact`` (a seeded HNSW graph at 1M is a ≥ 25 min single-threaded
build, measured apart in scale.py); ``index.bm25.shards`` stays ``auto``.

    python benchmarks/scale_cluster.py --chunks 100000 --runners local dask:1 dask:2   # ~7 min, the ratios
    python benchmarks/scale_cluster.py --chunks 1000000 --runners dask:2              # ~28 min here, ~15 GB peak

Writes benchmarks/results/scale_cluster.json (rows for other sizes kept) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from procs import stop_group  # noqa: E402
OUT = ROOT / "benchmarks" / "results" / "scale_cluster.json"
RAGRIG = Path(sys.executable).with_name("ragrig")
DIM = 384
BUCKETS = 1 << 16


# ---- the stand-in embeddings endpoint -------------------------------------------------------------------
def serve_embeddings(port_file: Path, lifetime_s: float) -> None:
    """Child: answer ``POST /v1/embeddings`` with a random projection of each text's words, until killed or
    ``lifetime_s`` has passed."""
    import orjson

    table = np.random.default_rng(7).standard_normal((BUCKETS, DIM)).astype(np.float32)

    def vector(text: str) -> np.ndarray:
        ids = [zlib.crc32(w.encode()) & (BUCKETS - 1) for w in text.lower().split()] or [0]
        v = table[ids].sum(axis=0)
        return v / max(float(np.linalg.norm(v)), 1e-9)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = orjson.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            rows = np.stack([vector(t) for t in body["input"]]) if body["input"] else np.zeros((0, DIM))
            raw = orjson.dumps({"data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]},
                               option=orjson.OPT_SERIALIZE_NUMPY)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
    signal.alarm(int(lifetime_s))
    server.serve_forever()


class Endpoint:
    """The stand-in endpoint in a child process group, stopped by group on exit."""

    def __init__(self, work: Path, lifetime_s: float) -> None:
        port_file = work / "endpoint.port"
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file), str(lifetime_s)],
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while not port_file.is_file() or not port_file.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the stand-in embeddings endpoint did not start")
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{port_file.read_text()}/v1"

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        stop_group(self.proc, grace_s=30)


# ---- corpus, ingest, queries ------------------------------------------------------------------------------
def make_corpus(n: int, where: Path) -> tuple[Path, list[str]]:
    """``corpus.jsonl`` of n one-chunk documents; returns it and 50 documents' texts (the known-item queries)."""
    from retrieval_latency import _topics, synthetic_words

    rng = np.random.default_rng(0)
    _, topic_vocab, topic_of = _topics(n, rng)
    where.mkdir(parents=True, exist_ok=True)
    path = where / "corpus.jsonl"
    probes = set(np.linspace(0, n - 1, 50).astype(int).tolist())
    queries: list[str] = []
    step = 100_000
    with open(path, "w", encoding="utf-8") as out:
        for start in range(0, n, step):
            stop = min(n, start + step)
            words = synthetic_words(stop - start, rng, topic_vocab, topic_of[start:stop])
            lines = []
            for j, row in enumerate(words):
                text = " ".join(f"w{w}" for w in row)
                if start + j in probes:
                    queries.append(f"d{start + j}\t" + " ".join(text.split()[:25]))
                lines.append(json.dumps({"_id": f"d{start + j}", "title": f"Doc {start + j}", "text": text}))
            out.write("\n".join(lines) + "\n")
    return path, queries


def settings(corpus: Path, url: str, partition: int) -> list[str]:
    return [f"corpus.path={corpus}", "corpus.format=beir", "index.name=scale-cluster", "retrieval.synonyms=null",
            "eval.testsets=[]", "embedding.backend=openai", "embedding.model=stand-in-bag-of-words",
            f"embedding.endpoint.base_url={url}", "embedding.batch_size=256", f"flow.extract_batch={partition}",
            "index.vector_search.mode=exact",
            "retrieval.fusion.weights.vector2=0"]  # the core's scaling; the second encoder's cost: views_cost.py


def ingest(runner: str, workers: int, sets: list[str], home: Path, work: Path) -> dict[str, Any]:
    from scale import sampled

    out = work / f"stats-{runner}-{workers}.json"
    flags = ["--runner", runner] + (["--workers", str(workers)] if runner == "dask" else [])
    cmd = [str(RAGRIG), "ingest", "-q", "--output-json", str(out), *flags,
           *[a for s in sets for a in ("--set", s)]]
    env = {**os.environ, "RAGRIG_HOME": str(home), "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "unused"}
    ran = sampled(cmd, env, every=0.5)
    if "error" in ran:
        return {"runner": runner, "workers": workers, "error": ran["error"]}
    wall, roles = ran["wall_s"], ran["peak_mb"]
    stats = json.loads(out.read_text())
    return {"runner": runner, "workers": workers, "chunks": stats["chunks"], "docs": stats["docs_seen"],
            "version": stats["version"], "wall_s": wall, "chunks_per_s": stats["chunks"] / wall,
            "stage_s": stats["seconds"], "peak_mb": {k: sorted(v, reverse=True) for k, v in roles.items()}}


def ask(home: Path, sets: list[str], queries: list[str]) -> dict[str, Any]:
    """Child process: open the published version as a reader does, ask each known-item query, time it."""
    os.environ.update({"RAGRIG_HOME": str(home), "OPENAI_API_KEY": "unused"})
    from ragrig.configs.load import load_config
    from ragrig.retrieval.search.retriever import Retriever
    from scale import rss_mb

    cfg = load_config(None, sets)
    t0 = time.perf_counter()
    retriever = Retriever(cfg)
    retriever.search("warm up w1 w2 w3", use_cache=False)
    open_s = time.perf_counter() - t0
    found, ms = 0, []
    for line in queries:
        doc, text = line.split("\t", 1)
        t1 = time.perf_counter()
        res = retriever.search(text, top_k=10, use_cache=False)
        ms.append((time.perf_counter() - t1) * 1000)
        found += bool(res.hits) and res.hits[0].doc_id == doc
    return {"queries": len(queries), "top1_is_the_document": found, "open_s": open_s,
            "search_ms_p50": float(np.median(ms)), "search_ms_p95": float(np.percentile(ms, 95)),
            "reader_rss_mb": rss_mb()}


def run(n: int, runners: list[tuple[str, int]], partition: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-cluster-", dir=os.environ.get("SCALE_TMP")) as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        corpus, queries = make_corpus(n, work / "corpus")
        print(f"# corpus of {n} documents in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        with Endpoint(work, lifetime_s=6 * 3600) as ep:
            sets = settings(corpus, ep.url, partition)
            for runner, workers in runners:
                home = work / f"home-{runner}-{workers}"
                row = {**ingest(runner, workers, sets, home, work), "partition_docs": partition,
                       "load_avg_1m": os.getloadavg()[0]}
                if "error" not in row:
                    (work / "queries.txt").write_text("\n".join(queries))
                    child = subprocess.run([sys.executable, __file__, "--ask", str(home), str(work / "queries.txt"),
                                            *sets], capture_output=True, text=True)
                    row["read"] = json.loads(child.stdout.strip().splitlines()[-1]) if child.returncode == 0 \
                        else {"error": (child.stderr.strip().splitlines() or ["?"])[-1]}
                    row["disk_mb"] = sum(f.stat().st_size for f in (home / "indexes").rglob("*")
                                         if f.is_file()) / 2**20 if (home / "indexes").is_dir() else None
                rows.append(row)
                print(f"# {runner} x{workers}: {json.dumps(row)[:400]}", file=sys.stderr, flush=True)
                shutil.rmtree(home, ignore_errors=True)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| chunks | runner | wall s | chunks/s | peak MiB driver | peak MiB per worker | top-1 known item | "
          "search p50 ms | stage seconds |")
    print("|---:|---|---:|---:|---:|---|---:|---:|---|")
    for r in rows:
        name = r["runner"] + (f" x{r['workers']}" if r["runner"] == "dask" else "")
        if "error" in r:
            print(f"| {r.get('chunks', '?')} | {name} | error: {r['error']} |")
            continue
        pk, rd = r["peak_mb"], r.get("read", {})
        stages = ", ".join(f"{k} {v:.0f}" for k, v in r["stage_s"].items() if v >= 0.5)
        print(f"| {r['chunks']:,} | {name} | {r['wall_s']:.0f} | {r['chunks_per_s']:.0f} | "
              f"{max(pk.get('driver', [0])):,.0f} | {' / '.join(f'{x:,.0f}' for x in pk.get('dask worker', [])) or '-'}"
              f" | {rd.get('top1_is_the_document', '?')}/{rd.get('queries', '?')} | "
              f"{rd.get('search_ms_p50', float('nan')):.0f} | {stages} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--runners", nargs="+", default=["local", "dask:2"], help="local, dask:N")
    ap.add_argument("--partition", type=int, default=None, help="documents per partition (flow.extract_batch); "
                    "default: chunks / 40, at least 500")
    ap.add_argument("--out", type=Path, default=OUT, help="the results file (default: %(default)s)")
    ap.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--ask", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve_embeddings(Path(args.serve[0]), float(args.serve[1]))
        return 0
    if args.ask:
        home, queries, *sets = args.ask
        print(json.dumps(ask(Path(home), sets, Path(queries).read_text().splitlines())))
        return 0
    runners = [(r.split(":")[0], int(r.split(":")[1]) if ":" in r else 1) for r in args.runners]
    partition = args.partition or max(500, args.chunks // 40)
    rows = run(args.chunks, runners, partition)
    out = args.out
    data: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    data.update({"cpus": os.cpu_count(), "machine": "the project machine (2 cores, shared)",
                 "embedding": "stand-in OpenAI-compatible endpoint (random projection of words), no model compute"})
    data["rows"] = [r for r in data.get("rows", []) if r.get("chunks") != args.chunks] + rows
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print_table(data["rows"])
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
