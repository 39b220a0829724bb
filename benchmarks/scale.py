"""The scale benchmark: ingest through the public CLI at 1 and 2 Dask workers (and the threads runner beside
them), and what a version of N synthetic chunks costs to build, part by part. docs/scale.md turns the
per-chunk costs into the 10M / 100M model.

Ingest: ``ragrig ingest`` runs in a child process with a fresh home (cold caches: every chunk is extracted,
chunked and embedded) over a BEIR corpus of the first ``--docs`` SciFact documents (../shared; the sample
corpus when absent), once per runner: ``--runner dask --workers N`` where the CLI has those flags, else
``--set flow.task_runner=dask --set flow.max_workers=N`` (the same settings). A sampler thread reads the RSS of
the CLI process and of every process under it every 0.2 s: the driver (the CLI), each Dask worker (processes
started by multiprocessing), the Prefect API server; its peak per process is reported. Chunks/s is chunks
over the child's wall time (start-up included) and over the ingest's own stage seconds (``--output-json``).
Whatever the runner spreads over workers today is measured: the same command measures the distributed
embedding once it lands.

Index: a child process per size generates N chunks (retrieval_latency.py's generator: topic + Zipf words, 120
a chunk, 384-d unit vectors near a topic centroid: synthetic vectors, since embedding 1M real chunks here would
take ~8 h at ~35 chunks/s) and writes a version folder's parts with the library's own writers, timing each:
tables, BM25 (``index.bm25.shards`` auto), keyword library, vectors.npy, the seeded HNSW graph (sizes up to
``--hnsw-max``), the manifest's file hashes. Chroma is not written (``vector_search`` auto never reads it;
its 1M build is in retrieval_latency.json). Then it opens the version's BM25 and vectors and times exact search.

    python benchmarks/scale.py                                   # ~5 min: 300 SciFact docs x 3 runs, 100k index
    python benchmarks/scale.py --skip-ingest --index-sizes 1000000   # the 1M index (~15 min, ~8 GB peak)

Writes benchmarks/results/scale.json (merging with the rows already there for other sizes) and prints tables.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = ROOT / "benchmarks" / "results" / "scale.json"
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
RAGRIG = Path(sys.executable).with_name("ragrig")


# ---- ingest through the CLI ------------------------------------------------------------------------------
class TreeSampler(threading.Thread):
    """Peak RSS of a process and everything under it, per process, sampled every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.stop = pid, every, threading.Event()
        self.peaks: dict[int, tuple[str, float]] = {}
        self.tree: dict[int, dict[str, Any]] = {}  # pid -> parent pid, role, command line head

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            try:
                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            for p in procs:
                try:
                    mb = p.memory_info().rss / 2**20
                    role = "driver" if p.pid == self.pid else role_of(" ".join(p.cmdline()))
                except psutil.Error:
                    continue
                if mb > self.peaks.get(p.pid, ("", 0.0))[1]:
                    self.peaks[p.pid] = (role, mb)
                    self.tree[p.pid] = {"ppid": p.ppid(), "role": role, "peak_mb": round(mb, 1),
                                        "cmd": " ".join(p.cmdline())[:160]}
            self.stop.wait(self.every)


def role_of(cmdline: str) -> str:
    if "resource_tracker" in cmdline:
        return "other"
    if "spawn_main" in cmdline or "forkserver" in cmdline:
        return "dask worker"
    if "prefect" in cmdline or "uvicorn" in cmdline:
        return "prefect server"
    return "other"


def sampled(cmd: list[str], env: dict[str, str], every: float = 0.2) -> dict[str, Any]:
    """Run ``cmd`` in its own process group (killed whole if this is interrupted) with a ``TreeSampler`` over
    it: its wall time and the peak RSS of each role's processes, or the last line of its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    sampler = TreeSampler(proc.pid, every=every)
    sampler.start()
    try:
        _, stderr = proc.communicate()
        wall = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        sampler.stop.set()
        sampler.join()
    if proc.returncode != 0:
        return {"error": (stderr.strip().splitlines() or ["?"])[-1]}
    roles: dict[str, list[float]] = {}
    for role, mb in sampler.peaks.values():
        roles.setdefault(role, []).append(round(mb, 1))
    return {"wall_s": wall, "peak_mb": roles, "sampler": sampler}


def make_corpus(docs: int, where: Path) -> tuple[Path, str]:
    """A BEIR corpus.jsonl of the first ``docs`` SciFact documents, or the sample corpus."""
    if not (SCIFACT / "corpus.jsonl").is_file():
        return ROOT / "datasets" / "sample", "sample corpus (SciFact not found)"
    where.mkdir(parents=True, exist_ok=True)
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as src, open(where / "corpus.jsonl", "w") as dst:
        for i, line in enumerate(src):
            if i >= docs:
                break
            dst.write(line)
    return where / "corpus.jsonl", f"SciFact, first {docs} documents"


def runner_args(runner: str, workers: int) -> list[str]:
    helptext = subprocess.run([str(RAGRIG), "ingest", "--help"], capture_output=True, text=True).stdout
    if runner == "threads":
        return ["--set", "flow.task_runner=threads", "--set", f"flow.max_workers={workers}"] \
            if "--runner" not in helptext else ["--runner", "local", "--workers", str(workers)]
    if "--workers" in helptext and "--runner" in helptext:
        return ["--runner", "dask", "--workers", str(workers)]
    return ["--set", "flow.task_runner=dask", "--set", f"flow.max_workers={workers}"]


def ingest_run(corpus: Path, runner: str, workers: int, work: Path) -> dict[str, Any]:
    home = work / f"home-{runner}-{workers}"
    shutil.rmtree(home, ignore_errors=True)
    out = work / f"stats-{runner}-{workers}.json"
    cmd = [str(RAGRIG), "ingest", "-q", "--output-json", str(out), "--set", f"corpus.path={corpus}",
           "--set", "index.name=scale", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]",
           "--set", "retrieval.fusion.weights.vector2=0",  # the core's scaling; the second encoder: views_cost.py
           *runner_args(runner, workers)]
    env = {**os.environ, "RAGRIG_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    ran = sampled(cmd, env)
    if "error" in ran:
        return {"runner": runner, "workers": workers, "error": ran["error"]}
    wall, roles, sampler = ran["wall_s"], ran["peak_mb"], ran["sampler"]
    stats = json.loads(out.read_text())
    own = stats["seconds"].get("total") or sum(stats["seconds"].values())
    shutil.rmtree(home, ignore_errors=True)
    return {"runner": runner, "workers": workers, "chunks": stats["chunks"], "docs": stats["docs_seen"],
            "wall_s": wall, "ingest_s": own, "chunks_per_s": stats["chunks"] / wall,
            "chunks_per_s_ingest": stats["chunks"] / own if own else None, "stage_s": stats["seconds"],
            "peak_mb": {k: sorted(v, reverse=True) for k, v in roles.items()},
            "processes": {str(k): v for k, v in sampler.tree.items()}}


# ---- a synthetic version, part by part -------------------------------------------------------------------
def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def build_index(n: int, hnsw_max: int, work: Path) -> dict[str, Any]:
    """Child: the parts of a version of n synthetic chunks, timed; their sizes; exact-search latency."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.documents import Chunk, Document, sha256_text
    from ragrig.retrieval.index import hnsw
    from ragrig.retrieval.index.bm25 import Bm25Index
    from ragrig.retrieval.index.format import (BM25_DIR, HNSW_GRAPH, file_hashes, read_chunks, write_keywords,
                                               write_tables)
    from ragrig.retrieval.index.vectors import read_vectors, unit_rows, write_vectors
    from ragrig.retrieval.ingest.keyword_mining import build_library
    from retrieval_latency import GENERATOR, _topics, synthetic_vectors, synthetic_words

    cfg = load_config(None, [f"corpus.path={work}", "retrieval.synonyms=null", "eval.testsets=[]",
                             "retrieval.fusion.weights.vector2=0"])
    parts: dict[str, dict[str, float]] = {}
    vdir = work / "version"
    vdir.mkdir(parents=True)

    def part(name: str, t0: float, files: list[Path] | None = None) -> None:
        size = sum(f.stat().st_size for p in files or [] for f in ([p] if p.is_file() else p.rglob("*"))
                   if f.is_file())
        parts[name] = {"s": time.perf_counter() - t0, "peak_mb": peak_mb(), "disk_mb": size / 2**20}

    t0 = time.perf_counter()
    rng = np.random.default_rng(GENERATOR["seed"])
    centroids, topic_vocab, topic_of = _topics(n, rng)
    words = synthetic_words(n, rng, topic_vocab, topic_of)
    vecs = synthetic_vectors(n, rng, centroids, topic_of)
    per_doc = 20
    docs, chunks = [], []
    for i in range(n):
        did = f"doc{i // per_doc}.md"
        if i % per_doc == 0:
            docs.append(Document(doc_id=did, sha256=sha256_text(did), format="md", markdown=f"# Doc {i // per_doc}"))
        body = " ".join(f"w{w}" for w in words[i])
        text, search = f"## Section {i}\n\n{body}", f"Section {i}\n{body}"
        chunks.append(Chunk(chunk_id=f"{did}#{i % per_doc}", doc_id=did, header_path=[f"Section {i}"], level=2,
                            start=0, end=len(text), text=text, search_text=search, sha256=sha256_text(search),
                            tokens=150))
    del words
    part("generate (not a build cost)", t0)
    t0 = time.perf_counter()
    write_tables(vdir, docs, chunks)
    part("tables", t0, [vdir / "documents.jsonl", vdir / "chunks.jsonl"])
    t0 = time.perf_counter()
    Bm25Index.build([c.search_text for c in chunks], cfg.index.bm25).save(vdir / BM25_DIR)
    part("bm25", t0, [vdir / BM25_DIR])
    t0 = time.perf_counter()
    write_keywords(vdir, build_library([f"Doc {i}" for i in range(len(docs))], [c.text for c in chunks]))
    part("keywords", t0, [vdir / "keywords.json"])
    t0 = time.perf_counter()
    unit = unit_rows(vecs)
    write_vectors(vdir, unit)
    part("vectors.npy", t0, [vdir / "vectors.npy"])
    if n <= hnsw_max:
        t0 = time.perf_counter()
        hnsw.save(hnsw.build(unit, cfg.index.vector_search.hnsw), vdir / HNSW_GRAPH)
        part("hnsw (1 thread)", t0, [vdir / HNSW_GRAPH])
    t0 = time.perf_counter()
    file_hashes(vdir)
    part("file hashes", t0)
    del docs, chunks, vecs, unit
    gc.collect()
    # reading it back as a reader does: the chunks table (Python objects), BM25, the vectors; exact search (a
    # matrix-vector product per query) and BM25 latency
    opened: dict[str, float] = {}
    t0 = time.perf_counter()
    tracemalloc.start()  # Python and numpy allocations, exactly (RSS would hide reused freed memory)
    table = read_chunks(vdir)
    opened["chunks table"] = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.reset_peak()
    bm25 = Bm25Index.load(vdir / BM25_DIR, cfg.index.bm25)
    opened["bm25"] = tracemalloc.get_traced_memory()[0] / 2**20 - opened["chunks table"]
    tracemalloc.stop()
    before = rss_mb()
    stored = read_vectors(vdir)
    stored[:: max(1, n // 1000)].sum()
    opened["vectors (mmap, touched)"] = rss_mb() - before
    open_s = time.perf_counter() - t0
    del table
    q = stored[:20] + 0.01
    stored @ q[0]  # first-use costs (BLAS threads, pages) out of the timing
    lat = []
    for row in q:
        t1 = time.perf_counter()
        s = stored @ row
        np.argpartition(-s, 100)[:100]
        lat.append((time.perf_counter() - t1) * 1000)
    bm25_ms = []
    for i in range(20):
        t1 = time.perf_counter()
        bm25.search(bm25.tokenizer(f"w{100 + i} w{2000 + i} w{30000 + i}"), 100)
        bm25_ms.append((time.perf_counter() - t1) * 1000)
    return {"chunks": n, "bm25_shards": len(bm25.parts), "parts": parts, "open_s": open_s, "open_mb": opened,
            "exact_search_ms_p50": float(np.median(lat)), "bm25_search_ms_p50": float(np.median(bm25_ms)),
            "peak_mb": peak_mb(), "disk_mb": sum(f.stat().st_size for f in vdir.rglob("*") if f.is_file()) / 2**20}


def index_run(n: int, hnsw_max: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        cmd = [sys.executable, __file__, "--child-index", str(n), str(hnsw_max), tmp]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return {"chunks": n, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        out["wall_s"] = time.perf_counter() - t0
        return out


# ---- output ------------------------------------------------------------------------------------------------
def print_tables(data: dict[str, Any]) -> None:
    print("| runner | workers | chunks | wall s | chunks/s (wall) | chunks/s (stages) | peak MiB driver | "
          "peak MiB per worker | peak MiB Prefect server | stage seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for r in data.get("ingest", []):
        if "error" in r:
            print(f"| {r['runner']} | {r['workers']} | error: {r['error']} |")
            continue
        pk = r["peak_mb"]
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stage_s"].items())
        print(f"| {r['runner']} | {r['workers']} | {r['chunks']} | {r['wall_s']:.1f} | {r['chunks_per_s']:.1f} | "
              f"{r['chunks_per_s_ingest']:.1f} | {max(pk.get('driver', [0])):.0f} | "
              f"{' / '.join(f'{x:.0f}' for x in pk.get('dask worker', [])) or '-'} | "
              f"{max(pk.get('prefect server', [0])):.0f} | {stages} |")
    print()
    print("| chunks | part | seconds | µs per chunk | disk MiB | bytes per chunk | process peak MiB after it |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in data.get("index", []):
        if "error" in r:
            print(f"| {r['chunks']} | error: {r['error']} |")
            continue
        n = r["chunks"]
        for name, p in r["parts"].items():
            print(f"| {n} | {name} | {p['s']:.1f} | {p['s'] / n * 1e6:.0f} | {p['disk_mb']:.0f} | "
                  f"{p['disk_mb'] * 2**20 / n:.0f} | {p['peak_mb']:.0f} |")
        print(f"| {n} | open BM25 + vectors; exact search p50, BM25 p50 | {r['open_s']:.1f} | "
              f"exact {r['exact_search_ms_p50']:.1f} ms, BM25 {r['bm25_search_ms_p50']:.2f} ms "
              f"({r['bm25_shards']} shard(s)) | {r['disk_mb']:.0f} | {r['disk_mb'] * 2**20 / n:.0f} | "
              f"{r['peak_mb']:.0f} |")
        mem = ", ".join(f"{k} {v:.0f} MiB ({v * 2**20 / n:.0f} B/chunk)" for k, v in r.get("open_mb", {}).items())
        print(f"| {n} | a reader's memory: {mem} | | | | | |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=300, help="SciFact documents to ingest per run")
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--no-threads-baseline", action="store_true")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--index-sizes", type=int, nargs="*", default=[100_000])
    ap.add_argument("--hnsw-max", type=int, default=100_000, help="build the HNSW graph up to this many chunks")
    ap.add_argument("--child-index", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_index:
        n, hmax, tmp = args.child_index
        print(json.dumps(build_index(int(n), int(hmax), Path(tmp))))
        return 0
    data: dict[str, Any] = json.loads(OUT.read_text()) if OUT.is_file() else {}
    data.update({"cpus": os.cpu_count(), "machine": "the project machine (2 cores, shared); no larger one at hand"})
    if not args.skip_ingest:
        with tempfile.TemporaryDirectory(prefix="scale-ingest-") as tmp:
            corpus, what = make_corpus(args.docs, Path(tmp) / "corpus")
            runs = [] if args.no_threads_baseline else [("threads", 2)]
            runs += [("dask", w) for w in args.workers]
            data["ingest_corpus"] = what
            data["ingest"] = []
            for runner, w in runs:
                data["ingest"].append({**ingest_run(corpus, runner, w, Path(tmp)),
                                       "load_avg_1m": os.getloadavg()[0]})  # the machine is shared
                print(f"# ingest {runner} x{w}: done", file=sys.stderr, flush=True)
    if args.index_sizes:
        keep = [r for r in data.get("index", []) if r.get("chunks") not in args.index_sizes]
        for n in args.index_sizes:
            keep.append({**index_run(n, args.hnsw_max), "load_avg_1m": os.getloadavg()[0]})
            print(f"# index {n}: done", file=sys.stderr, flush=True)
        data["index"] = sorted(keep, key=lambda r: r["chunks"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    print_tables(data)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
