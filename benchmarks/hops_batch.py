"""Evaluation with multi-hop on vs off, side by side in one process (issue 37: hops as batches).

Each hop of a batch is one ``search_many`` for every query's missing items (``retrieval/multihop/hops.py``), so an
evaluation with hops stays a batch. Goal: the evaluation with ``max_hops=1`` takes <= 1.1 x the same evaluation with
``max_hops=0``. Per config and test set: one untimed warm-up evaluation of a few queries per setting (imports,
the term index, the first forward pass), then ``--repeats`` timed evaluations per setting, alternating which goes
first, each with an empty result cache; ``ragrig.eval.evaluate.evaluate`` exactly as ``ragrig eval --no-prefect``
calls it (ragas off, no MLflow). Also counted for the hops run: the calls of ``search_many`` and the queries
they carried (before issue 37 each hop retrieval was a batch of one of its own).

    python benchmarks/hops_batch.py configs/srd.yaml configs/pydantic-docs.yaml [--repeats 3] [--set K=V ...]

Prints a table; writes benchmarks/results/hops_batch.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

GOAL = 1.1
WARMUP_QUERIES = 5


def timed_eval(cfg: Any, ts: Any, retriever: Any, targets: Any, hops: int) -> tuple[float, Any]:
    from ragrig.eval.evaluate import evaluate

    retriever.cache.clear()
    t0 = time.perf_counter()
    report = evaluate(cfg, ts, retriever, max_hops=hops, targets=targets)
    return time.perf_counter() - t0, report


def counted(retriever: Any, fn: Any) -> tuple[Any, list[int]]:
    """``fn()`` with the retriever's search_many calls counted (the number of queries each carried)."""
    real, sizes = retriever.search_many, []

    def search_many(queries: Any, **kw: Any) -> Any:
        sizes.append(len(queries))
        return real(queries, **kw)

    retriever.search_many = search_many
    try:
        return fn(), sizes
    finally:
        del retriever.search_many


def measure(path: str, overrides: list[str], repeats: int) -> list[dict[str, Any]]:
    from ragrig.configs.load import load_config
    from ragrig.eval.relevance import resolve_testset
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.search.retriever import Retriever

    cfg = load_config(path, ["eval.ragas=false", "mlflow.enabled=false", *overrides])
    retriever = Retriever(cfg)
    rows = []
    for tsp in cfg.eval.testsets:
        ts = load_testset(tsp)
        targets = resolve_testset(ts, retriever.version.documents_by_id)
        warm = ts.model_copy(update={"cases": ts.cases[:WARMUP_QUERIES]})
        for hops in (0, 1):
            timed_eval(cfg, warm, retriever, targets, hops)
        samples: dict[int, list[float]] = {0: [], 1: []}
        reports: dict[int, Any] = {}
        for i in range(repeats):
            for hops in ((0, 1) if i % 2 == 0 else (1, 0)):
                s, reports[hops] = timed_eval(cfg, ts, retriever, targets, hops)
                samples[hops].append(s)
        (_, calls) = counted(retriever, lambda: timed_eval(cfg, ts, retriever, targets, 1))
        off, on = statistics.median(samples[0]), statistics.median(samples[1])
        rows.append({"config": path, "testset": ts.name, "queries": len(ts.cases), "off_s": off, "on_s": on,
                     "ratio": on / off, "goal": GOAL, "met": on / off <= GOAL, "samples_s": samples,
                     "search_many_calls": len(calls), "queries_per_call": calls,
                     "ndcg@10": {h: reports[h].overall.get("ndcg@10") for h in (0, 1)},
                     "hops_taken": sum(len(r.get("hops", [])) for r in reports[1].to_dict()["per_query"])})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hops_batch.json"))
    args = ap.parse_args(argv)
    rows = [row for path in args.configs for row in measure(path, args.overrides, args.repeats)]
    print(f"{'test set':22s} {'n':>4s} {'hops 0 s':>9s} {'hops 1 s':>9s} {'ratio':>6s} {'goal':>5s}  "
          f"search_many calls (queries each)")
    for r in rows:
        print(f"{r['testset']:22s} {r['queries']:4d} {r['off_s']:9.2f} {r['on_s']:9.2f} {r['ratio']:6.2f} "
              f"{'met' if r['met'] else 'NOT':>5s}  {r['search_many_calls']} ({', '.join(map(str, r['queries_per_call']))})")
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_avg": os.getloadavg()}, "repeats": args.repeats, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
