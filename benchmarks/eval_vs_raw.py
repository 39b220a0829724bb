"""Evaluation end to end against its limit on this hardware: batched query encoding + raw index search.

Goal (issue): evaluating the 300 SciFact test queries takes <= 1.3 x (one batched query-encoding call +
raw BM25 top-`candidates` per query + one vector search call for the batch). Measured side by side in one process,
``--repeats`` times (order rotated each repeat), median and all samples reported:

(a) ``ragrig.eval.evaluate.evaluate(cfg, ts, retriever, targets=...)`` exactly as ``ragrig eval --no-prefect`` calls
    it: query processing, batched embedding, BM25 + vector retrieval, fusion, shaping, multi-hop as
    configured, metrics, ragas non-LLM metrics when ``eval.ragas`` is on. Not timed: loading and resolving
    the test set, opening the index (Retriever construction), MLflow logging, and one-time warm-up (imports
    such as ragas, the multi-hop term index, torch's first forward pass: an untimed warm-up evaluation on
    a few queries pays them). Every repeat starts with no query-vector / candidate memo and an empty
    result cache.
(b) the limit: ``embedder.encode_queries`` over the same (processed) query texts the evaluation embeds, in
    one call; ``Bm25Index.search`` (tokenisation included) for top-`candidates` per query; one
    ``collection.query`` with all query vectors, ``n_results=candidates``. No fusion, shaping or metrics.

Rows: the config as is (SciFact: retrieval.max_hops=1 from the defaults) and with retrieval.max_hops=0.
Where (a) spends its time beyond (b): one instrumented evaluation per row (exclusive seconds per stage,
from thin timers around the retriever's stage methods) and one evaluation under cProfile (top 10 functions
by cumulative and by own time), both separate from the timed repeats.

Writes <out>/eval_vs_raw.json and eval_vs_raw.md and prints the Markdown table. Needs the published
SciFact index (`ragrig ingest -c configs/scifact.yaml`).

    python benchmarks/eval_vs_raw.py [--config configs/scifact.yaml] [--repeats 3] [--queries N] [--out DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("RAGRIG_HOME", str(ROOT / ".ragrig"))  # what `ragrig` uses when run from the repo root

GOAL = 1.3
WARMUP_QUERIES = 10
EXCLUDED = [
    "loading and resolving the test set (eval.testset.load_testset, eval.relevance.resolve_testset)",
    "opening the index (Retriever construction: chunks, BM25, vectors, embedding model)",
    "MLflow logging (eval.tracking.runs.log_report)",
    (f"one-time warm-up (imports, multi-hop term index, first forward pass): an untimed evaluation of "
     f"{WARMUP_QUERIES} queries runs first"),
]


def summary(samples: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "samples": samples}


# ---- (b): the limit ------------------------------------------------------------------------------------------
def raw_search(retriever: Any, texts: list[str], bm25_texts: list[str], n: int) -> dict[str, float]:
    """Seconds for one batched encode, BM25 top-n per query, and one vector search call for the batch (the
    version's own: exact, the seeded HNSW, or Chroma; ``retrieval/search/vector_search.py``)."""
    import numpy as np

    t0 = time.perf_counter()
    vecs = retriever.embedder.encode_queries(texts)
    t1 = time.perf_counter()
    bm25 = retriever.sources.bm25_index
    tok = bm25.tokenizer
    for q in bm25_texts:
        bm25.search(tok(q), n, None)
    t2 = time.perf_counter()
    retriever.sources.vector_search.search(np.asarray(vecs, dtype=np.float32), n, None)
    t3 = time.perf_counter()
    return {"encode_s": t1 - t0, "bm25_s": t2 - t1, "vector_s": t3 - t2, "total_s": t3 - t0}


# ---- (a): the evaluation --------------------------------------------------------------------------------------
def fresh(retriever: Any) -> None:
    """No state from an earlier run: an empty result cache (candidates are memoised per call, not kept)."""
    retriever.cache.clear()
    assert len(retriever.cache) == 0


def run_eval(cfg: Any, ts: Any, retriever: Any, targets: Any) -> tuple[float, Any]:
    from ragrig.eval.evaluate import evaluate

    fresh(retriever)
    t0 = time.perf_counter()
    report = evaluate(cfg, ts, retriever, repeats=None, max_hops=None, targets=targets)  # as `ragrig eval` does
    return time.perf_counter() - t0, report


class StageClock:
    """Exclusive seconds per wrapped function (time in a wrapped callee is charged to the callee only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.items: dict[str, int] = defaultdict(int)
        self._stack: list[float] = []
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, stage: str, items: Callable[..., int] | None = None) -> None:
        fn = getattr(owner, attr)
        had_own = isinstance(owner, type) or attr in getattr(owner, "__dict__", {})

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            self._stack.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                inner = self._stack.pop()
                self.seconds[stage] += elapsed - inner
                self.calls[stage] += 1
                if items is not None:
                    self.items[stage] += items(*args, **kwargs)
                if self._stack:
                    self._stack[-1] += elapsed

        setattr(owner, attr, timed)
        self._undo.append((lambda: setattr(owner, attr, fn)) if had_own else (lambda: delattr(owner, attr)))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


def instrumented(cfg: Any, ts: Any, retriever: Any, targets: Any) -> dict[str, Any]:
    """One evaluation with stage timers: exclusive seconds per stage, call counts, texts embedded."""
    import ragrig.eval.evaluate as evaluation
    import ragrig.eval.ragas_metrics as ragas_metrics
    import ragrig.eval.report as report
    import ragrig.retrieval.search.retriever as pipeline

    clock = StageClock()
    r = cfg.retrieval
    clock.wrap(evaluation, "evaluate", "evaluate: glue (loop, latencies, report)")
    clock.wrap(retriever, "search_many", "search_many: glue")
    clock.wrap(retriever, "search", "search: glue (cache key)")
    clock.wrap(retriever, "_search_batch", "pipeline: glue (results, timings)")
    clock.wrap(retriever.processor_for(r), "process", "query processing")
    clock.wrap(retriever.embedder, "encode_queries", "embed", items=lambda qs: len(qs))
    clock.wrap(retriever.sources, "bm25", "bm25 (tokenise + top-n)")
    clock.wrap(retriever.sources, "vectors", "vector (one vector search call for the batch)")
    clock.wrap(retriever.sources, "header", "header lookup")
    clock.wrap(retriever, "_batch", "candidate sets and batch")
    clock.wrap(pipeline, "fuse", "fusion")
    clock.wrap(pipeline, "select", "selection (min_relevance, dedup, cut)")
    clock.wrap(retriever, "_hit", "hits (per-source ranks)")
    clock.wrap(retriever, "_shape", "shaping (comparison, adaptive, expansion)")
    clock.wrap(retriever, "_entity_rows", "comparison entities")
    clock.wrap(pipeline, "multi_hop", "multi-hop: judge + placement")
    clock.wrap(evaluation, "score_results", "scoring: per-query rows")
    clock.wrap(report, "query_metrics", "scoring: metrics")
    clock.wrap(ragas_metrics, "ragas_scores", "ragas non-LLM metrics")
    hits0, misses0 = retriever.cache.hits, retriever.cache.misses
    gc_pauses: dict[int, list[float]] = defaultdict(list)  # generation -> pause seconds (inside the stages)
    gc_start: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_start.append(time.perf_counter())
        elif gc_start:
            gc_pauses[info["generation"]].append(time.perf_counter() - gc_start.pop())

    gc.callbacks.append(on_gc)
    try:
        fresh(retriever)
        t0 = time.perf_counter()
        evaluation.evaluate(cfg, ts, retriever, repeats=None, max_hops=None, targets=targets)
        total = time.perf_counter() - t0
    finally:
        gc.callbacks.remove(on_gc)
        clock.restore()
    stages = {k: {"s": round(v, 4), "calls": clock.calls[k], **({"texts": clock.items[k]} if k in clock.items else {})}
              for k, v in sorted(clock.seconds.items(), key=lambda kv: -kv[1])}
    return {"total_s": round(total, 4), "stages": stages,
            "gc_pauses": {f"gen{g}": {"collections": len(v), "s": round(sum(v), 4)} for g, v in sorted(gc_pauses.items())},
            "result_cache": {"hits": retriever.cache.hits - hits0, "misses": retriever.cache.misses - misses0}}


def profiled(cfg: Any, ts: Any, retriever: Any, targets: Any, top: int = 10) -> dict[str, Any]:
    from ragrig.eval.evaluate import evaluate

    fresh(retriever)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    evaluate(cfg, ts, retriever, repeats=None, max_hops=None, targets=targets)
    prof.disable()
    wall = time.perf_counter() - t0
    st = pstats.Stats(prof)
    rows = []
    for (file, line, name), (_cc, ncalls, tottime, cumtime, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if "_lsprof.Profiler" in name:  # the profiler's own disable()
            continue
        where = name if file == "~" else f"{_short(file)}:{line}({name})"
        rows.append({"function": where, "ncalls": ncalls, "tottime_s": round(tottime, 4), "cumtime_s": round(cumtime, 4)})
    return {"wall_s_profiled": round(wall, 3),
            "top_cumulative": sorted(rows, key=lambda x: -x["cumtime_s"])[:top],
            "top_self": sorted(rows, key=lambda x: -x["tottime_s"])[:top]}


def _short(file: str) -> str:
    p = Path(file)
    if "site-packages" in p.parts:
        return "/".join(p.parts[p.parts.index("site-packages") + 1:])
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return p.name


# ---- output -------------------------------------------------------------------------------------------------
def markdown(doc: dict[str, Any]) -> str:
    raw = doc["raw"]
    lines = [
        (f"Evaluation vs batched encoding + raw search: {doc['queries']} {doc['testset']} queries, index "
         f"{doc['index']['key']}@{doc['index']['version']} ({doc['index']['chunks']:,} chunks), candidates "
         f"{doc['candidates']}, {doc['repeats']} repeat(s), medians, {doc['cpus']} CPUs"),
        "",
        ("| evaluation | (a) evaluate s | (b) encode s | (b) bm25 s | (b) vector s | (b) total s | a / b | "
         f"goal ≤ {doc['goal_ratio']} |"),
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in doc["rows"]:
        lines.append(
            f"| {row['label']} | {row['eval_s']['median']:.2f} | {raw['encode_s']['median']:.2f} | "
            f"{raw['bm25_s']['median']:.3f} | {raw['vector_s']['median']:.3f} | {raw['total_s']['median']:.2f} | "
            f"{row['ratio']:.2f} | {'met' if row['met'] else 'MISSED'} |")
    lines += ["", "Samples (s): " + "; ".join(
        f"{r['label']}: {', '.join(f'{x:.2f}' for x in r['eval_s']['samples'])}" for r in doc["rows"])
        + f"; raw: {', '.join(f'{x:.2f}' for x in raw['total_s']['samples'])}",
        "", "Not timed in (a): " + "; ".join(doc["excluded"]) + ".", ""]
    for row in doc["rows"]:
        inst = row["instrumented"]
        lines += [(f"Where (a) spends its time, {row['label']} (one instrumented run, {inst['total_s']:.2f} s; "
                   f"exclusive seconds per stage; (b) medians for comparison):"), "",
                  "| stage | calls | s | (b) s |", "|---|---:|---:|---:|"]
        counterpart = {"embed": raw["encode_s"]["median"], "bm25 (tokenise + top-n + id mapping)": raw["bm25_s"]["median"],
                       "vector (one vector search call for the batch)": raw["vector_s"]["median"]}
        for stage, v in inst["stages"].items():
            calls = f"{v['calls']}" + (f" ({v['texts']} texts)" if "texts" in v else "")
            b = counterpart.get(stage)
            lines.append(f"| {stage} | {calls} | {v['s']:.3f} | {'' if b is None else f'{b:.3f}'} |")
        if inst.get("gc_pauses"):
            lines += ["", "Cyclic GC pauses during that run (already inside the stages above): " + ", ".join(
                f"{g}: {v['collections']} collections, {v['s']:.3f} s" for g, v in inst["gc_pauses"].items()) + "."]
        lines += ["", (f"Top 10 by cumulative time under cProfile ({row['label']}, "
                       f"{row['profile']['wall_s_profiled']:.2f} s profiled):"), "",
                  "| function | calls | cumulative s | own s |", "|---|---:|---:|---:|"]
        for p in row["profile"]["top_cumulative"]:
            lines.append(f"| `{p['function']}` | {p['ncalls']} | {p['cumtime_s']:.3f} | {p['tottime_s']:.3f} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "scifact.yaml"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queries", type=int, default=None, help="only the first N test queries (smoke tests)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)

    from ragrig.configs.errors import IndexNotFoundError, InputError
    from ragrig.configs.load import load_config
    from ragrig.eval.relevance import resolve_testset
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.search.retriever import Retriever

    cfg = load_config(args.config)
    shown = os.path.relpath(args.config, ROOT) if Path(args.config).is_absolute() else args.config
    ingest_hint = f"run `ragrig ingest -c {shown}` first"
    try:
        retriever = Retriever(cfg)
    except IndexNotFoundError as exc:
        print(f"eval_vs_raw: {exc}\n{ingest_hint} (the index lives in the ragrig home, $RAGRIG_HOME, default "
              f"{ROOT / '.ragrig'})", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"eval_vs_raw: {exc}\n{ingest_hint}", file=sys.stderr)
        return 2
    if not cfg.eval.testsets:
        print(f"eval_vs_raw: {args.config} names no eval.testsets", file=sys.stderr)
        return 2
    ts = load_testset(cfg.eval.testsets[0])
    if args.queries:
        ts = ts.model_copy(update={"cases": ts.cases[: args.queries]})
    targets = resolve_testset(ts, retriever.version.documents_by_id)

    cfg0 = load_config(args.config, ["retrieval.max_hops=0"])  # what `ragrig eval --set retrieval.max_hops=0` loads
    retriever0 = Retriever(cfg0, version=retriever.version, embedder=retriever.embedder)
    hops = cfg.retrieval.max_hops
    rows_spec = [(f"as configured (max_hops={hops})", cfg, retriever, []),
                 ("max_hops=0", cfg0, retriever0, ["retrieval.max_hops=0"])]
    if hops == 0:
        rows_spec = rows_spec[:1]

    r = cfg.retrieval
    n = min(r.candidates, len(retriever.chunks))
    proc = retriever.processor_for(r)
    processed = [proc.process(c.query) for c in ts.cases]
    texts = [p.text for p in processed]  # exactly what search_many hands to encode_queries
    bm25_texts = [p.bm25_text for p in processed]

    # warm-up, untimed: imports (ragas), term index, first forward pass, vector/BM25 pages
    warm = ts.model_copy(update={"cases": ts.cases[:WARMUP_QUERIES]})
    warm_targets = {c.id: targets[c.id] for c in warm.cases}
    for _label, c, ret, _ in rows_spec:
        run_eval(c, warm, ret, warm_targets)
    raw_search(retriever, texts[:WARMUP_QUERIES], bm25_texts[:WARMUP_QUERIES], n)

    raw_samples: dict[str, list[float]] = defaultdict(list)
    eval_samples: list[list[float]] = [[] for _ in rows_spec]
    reports: list[Any] = [None] * len(rows_spec)
    jobs = ["raw", *range(len(rows_spec))]
    for rep in range(args.repeats):
        order = jobs[rep % len(jobs):] + jobs[: rep % len(jobs)]  # rotate, so no side always runs first
        for job in order:
            if job == "raw":
                for k, v in raw_search(retriever, texts, bm25_texts, n).items():
                    raw_samples[k].append(round(v, 4))
            else:
                _label, c, ret, _ = rows_spec[job]
                secs, reports[job] = run_eval(c, ts, ret, targets)
                eval_samples[job].append(round(secs, 4))
        print(f"repeat {rep + 1}/{args.repeats}: raw {raw_samples['total_s'][-1]:.2f} s, evaluate "
              + ", ".join(f"{s[-1]:.2f} s" for s in eval_samples), file=sys.stderr, flush=True)

    raw = {k: summary(v) for k, v in raw_samples.items()}
    rows = []
    for i, (label, c, ret, overrides) in enumerate(rows_spec):
        ratio = statistics.median(eval_samples[i]) / raw["total_s"]["median"]
        rep_ = reports[i]
        rows.append({
            "label": label, "max_hops": c.retrieval.max_hops, "overrides": overrides,
            "eval_s": summary(eval_samples[i]), "ratio": round(ratio, 3), "met": ratio <= GOAL,
            "ratio_samples": [round(a / b, 3) for a, b in zip(eval_samples[i], raw_samples["total_s"])],
            "ragas": bool(c.eval.ragas),
            "overall": {k: round(rep_.overall[k], 4) for k in ("ndcg@10", "recall@10", "recall@100") if k in rep_.overall},
            "instrumented": instrumented(c, ts, ret, targets),
            "profile": profiled(c, ts, ret, targets),
        })
    doc = {
        "benchmark": "eval_vs_raw",
        "config": shown,
        "testset": ts.name, "queries": len(ts.cases),
        "index": {"key": retriever.version.layout.key, "version": retriever.version.version,
                  "chunks": len(retriever.chunks)},
        "model": retriever.version.model_id, "candidates": n, "repeats": args.repeats,
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "goal_ratio": GOAL, "excluded": EXCLUDED,
        "raw": raw, "rows": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval_vs_raw.json").write_text(json.dumps(doc, indent=2) + "\n")
    md = markdown(doc)
    (out / "eval_vs_raw.md").write_text(md)
    print(md)
    print(f"wrote {out / 'eval_vs_raw.json'} and eval_vs_raw.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
