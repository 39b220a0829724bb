"""A reader's open time and memory (issue 38): the synthetic index of retrieval_latency.py opened by a ``Retriever``
with every chunk row parsed into a Python object (every reader before the version had ``reader/``) and with the
lazy chunk table (rows parsed when read, the per-version structures read from ``reader/``), side by side: each
in a fresh child process, the two alternated, ``--repeats`` times. BM25's postings are memory-mapped in both.

Per child: the seconds ``Retriever(cfg)`` takes and the first query's (which made the de-duplication keys and
the term index before they were stored); its memory after opening and after the queries, from
/proc/self/smaps_rollup: RSS split into anonymous (the process's own: Python objects, loaded arrays, the model)
and file-backed (pages of the version's files, shared by every reader of that version on the machine, and
given back by the kernel under pressure); BM25's p50 per query (``Sources.bm25`` at ragrig's candidate depth)
and hybrid's (``Retriever.search`` with the default fusion). Queries: retrieval_latency's synthetic ones.

    python benchmarks/reader_memory.py [--size 100000] [--queries 200] [--repeats 2] [--home DIR] [--set K=V ...]

Builds (or reuses) the index under <home>/bench-scale/<size> as retrieval_latency.py does. Prints a Markdown
table, writes benchmarks/results/reader_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
MODES = ("parsed", "lazy")


def smaps_mb() -> dict[str, float]:
    """RSS, anonymous and file-backed resident memory of this process, MiB (Linux)."""
    out: dict[str, float] = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Anonymous"):
            out[key.lower()] = int(rest.split()[0]) / 1024
    out["file"] = out["rss"] - out["anonymous"]
    return {k: round(v, 1) for k, v in out.items()}


def reader(mode: str, home: str, n: int, count: int, sets: list[str]) -> dict[str, Any]:
    """Child process: open the index with its chunk table ``mode``, query it, report time and memory."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index import version
    from ragrig.retrieval.search.retriever import Retriever
    from retrieval_latency import synthetic_queries

    if mode == "parsed":  # what every reader did before reader/: every row parsed, the structures made here
        version.has_reader = lambda _: False
    os.environ["RAGRIG_HOME"] = home
    cfg = load_config(None, [f"corpus.path={Path(home) / 'corpus'}", f"index.name=synthetic-{n}",
                             "retrieval.synonyms=null", "eval.testsets=[]", "index.keep_versions=1",
                             "retrieval.fusion.weights.vector2=0", *sets])
    texts, _ = synthetic_queries(n, count + 1)
    first = texts.pop()  # the first query: one the measured ones do not repeat
    before = smaps_mb()
    t0 = time.perf_counter()
    r = Retriever(cfg)
    open_s = time.perf_counter() - t0
    opened = smaps_mb()
    depth = cfg.retrieval.candidates
    t0 = time.perf_counter()
    r.search(first)
    first_s = time.perf_counter() - t0
    bm25_ms, hybrid_ms = [], []
    for text in texts:
        t0 = time.perf_counter()
        r.sources.bm25(text, depth, None)
        bm25_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        r.search(text)
        hybrid_ms.append((time.perf_counter() - t0) * 1e3)
    return {"mode": mode, "chunks": len(r.chunks), "open_s": round(open_s, 3), "first_query_s": round(first_s, 3),
            "lazy_rows": r.chunks.lazy_rows, "start_mb": before,
            "opened_mb": opened, "queried_mb": smaps_mb(), "bm25_p50_ms": round(float(np.median(bm25_ms)), 3),
            "hybrid_p50_ms": round(float(np.median(hybrid_ms)), 3)}


def child(argv: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_reader":
        print(json.dumps(reader(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--home", default=os.environ.get("RAGRIG_HOME", str(ROOT / ".ragrig")))
    ap.add_argument("--output", type=Path, default=HERE / "results" / "reader_memory.json")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config setting for the build and the readers (e.g. index.vector_search.mode=exact)")
    args = ap.parse_args()
    home = Path(args.home) / "bench-scale" / str(args.size)
    built = subprocess.run([sys.executable, str(HERE / "retrieval_latency.py"), "_build", str(args.size), str(home),
                            *args.set],
                           capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise SystemExit(f"building the synthetic index failed:\n{built.stderr[-3000:]}")
    runs = [child(["_reader", mode, str(home), str(args.size), str(args.queries), *args.set])
            for _ in range(args.repeats) for mode in MODES]
    print(f"synthetic index of {args.size:,} chunks under {home}; {args.queries} queries; {args.repeats} runs each\n")
    print("| chunk table | open s | first query s | RSS after open MiB (anon / file) | RSS after queries MiB "
          "(anon / file) | BM25 p50 ms | hybrid p50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        med = {key: float(np.median([r[key] for r in mine])) for key in ("open_s", "first_query_s", "bm25_p50_ms",
                                                                  "hybrid_p50_ms")}
        for phase in ("opened_mb", "queried_mb"):
            for part in ("rss", "anonymous", "file"):
                med[f"{phase}.{part}"] = float(np.median([r[phase][part] for r in mine]))
        summary[mode] = med
        print(f"| {mode} | {med['open_s']:.2f} | {med['first_query_s']:.2f} | {med['opened_mb.rss']:.0f} ({med['opened_mb.anonymous']:.0f} / "
              f"{med['opened_mb.file']:.0f}) | {med['queried_mb.rss']:.0f} ({med['queried_mb.anonymous']:.0f} / "
              f"{med['queried_mb.file']:.0f}) | {med['bm25_p50_ms']:.2f} | {med['hybrid_p50_ms']:.2f} |")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"size": args.size, "queries": args.queries, "sets": args.set, "runs": runs,
                                       "median": summary}, indent=1) + "\n")
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
