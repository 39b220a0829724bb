"""What the second-encoder view costs (issue 35: ``retrieval.fusion.weights.vector2`` with
``retrieval.views.second_model``), side by side in one process: ingest from an empty home with the view off and on
(the ``views`` stage is the second embedding of every chunk), the index's open time, and single-query latency
(``Retriever.search``, one query at a time as ``ragrig query`` and ``serve`` ask, the result cache off) over the
config's test-set questions, rounds alternating which setting goes first.

    python benchmarks/views_cost.py configs/default.yaml configs/pydantic-docs.yaml [--repeats 3] [--set K=V ...]

Each setting gets its own fresh home (no embedding cache shared), so "ingest on / off" is the whole cost of the
view at ingest; the encoders are loaded once before any timing. Prints a table; writes
benchmarks/results/views_cost.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

ON = ["retrieval.fusion.weights.vector2=1", "retrieval.views.second_model=bge-small-en-v1.5"]
OFF = ["retrieval.fusion.weights.vector2=0"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def measure(path: str, overrides: list[str], repeats: int, scratch: Path) -> dict[str, Any]:
    from ragrig.configs.load import load_config
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever

    name = Path(path).stem
    cfgs = {s: load_config(path, ["eval.ragas=false", "mlflow.enabled=false", *overrides, *extra,
                                  f"home={scratch / name / s}"]) for s, extra in (("off", OFF), ("on", ON))}
    row: dict[str, Any] = {"config": path}
    for s, cfg in cfgs.items():
        t0 = time.perf_counter()
        stats = IngestPipeline(cfg).run()
        row[f"ingest_{s}_s"] = time.perf_counter() - t0
        row[f"views_{s}_s"] = stats.seconds.get("views", 0.0)
        row["chunks"] = stats.chunks
    retrievers = {}
    for s, cfg in cfgs.items():
        t0 = time.perf_counter()
        retrievers[s] = Retriever(cfg)
        row[f"open_{s}_s"] = time.perf_counter() - t0
    queries = [c.query for tsp in cfgs["off"].eval.testsets for c in load_testset(tsp).cases]
    for s, r in retrievers.items():  # warm-up: each encoder's first forward pass
        r.search(queries[0], use_cache=False)
    lat: dict[str, list[float]] = {"off": [], "on": []}
    for i in range(repeats):
        for s in (("off", "on") if i % 2 == 0 else ("on", "off")):
            for q in queries:
                t0 = time.perf_counter()
                retrievers[s].search(q, use_cache=False)
                lat[s].append((time.perf_counter() - t0) * 1000)
    for s in lat:
        row[f"p50_{s}_ms"], row[f"p95_{s}_ms"] = statistics.median(lat[s]), pct(lat[s], 0.95)
    row.update(queries=len(queries), ingest_ratio=row["ingest_on_s"] / row["ingest_off_s"],
               p50_ratio=row["p50_on_ms"] / row["p50_off_ms"])
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "views_cost.json"))
    args = ap.parse_args(argv)
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.embedding import Embedder

    for model in ("all-MiniLM-L6-v2", "bge-small-en-v1.5"):  # load both encoders' code before any timing
        Embedder(EmbeddingConfig(model=model)).encode_queries(["warm"])
    with tempfile.TemporaryDirectory(prefix="ragrig-views-cost-") as tmp:
        rows = [measure(p, args.overrides, args.repeats, Path(tmp)) for p in args.configs]
    print(f"{'config':28s} {'chunks':>7s} {'ingest off s':>12s} {'on s':>7s} {'views s':>8s} {'ratio':>6s} "
          f"{'open off/on s':>14s} {'p50 off/on ms':>14s} {'ratio':>6s} {'p95 off/on ms':>14s}")
    for r in rows:
        print(f"{r['config']:28s} {r['chunks']:7d} {r['ingest_off_s']:12.1f} {r['ingest_on_s']:7.1f} "
              f"{r['views_on_s']:8.1f} {r['ingest_ratio']:6.2f} {r['open_off_s']:6.2f}/{r['open_on_s']:<7.2f} "
              f"{r['p50_off_ms']:6.1f}/{r['p50_on_ms']:<7.1f} {r['p50_ratio']:6.2f} "
              f"{r['p95_off_ms']:6.1f}/{r['p95_on_ms']:<7.1f}")
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
           "repeats": args.repeats, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
