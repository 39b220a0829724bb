"""Where the rerank stage's time goes, and what a token cap costs in quality.

For one corpus (its published index and test set):

1. **The pairs.** Each test query's top ``top_n`` as the rerank stage sees them: the retriever runs with a
   recording scorer in place of the cross-encoder, so the pairs are exactly the stage's (hop 0, the query's own
   head).
2. **Their shape.** Tokens per pair (query, passage, total) at the model's own limit; the padding a batch of
   ``batch_size`` adds with and without sorting by length.
3. **Latency per query.** The query's pairs scored by the packaged cross-encoder with no cache, once per
   setting, the settings interleaved query by query so that they share the machine's load: today's (512
   tokens, batches of 16, onnxruntime's own threads), each ``--caps`` value, each ``--batch-sizes`` value and
   each ``--threads`` value at ``--cap``. p50 / p95 per setting and the ratio to today's, from the same run.
4. **Quality per cap** (``--quality``): nDCG@10 of the whole test set with rerank on at each cap (and off), on
   one open index; each cap's cross-encoder scores are its own.

Writes benchmarks/results/rerank_latency-<index name>.json (``--out``) and prints the tables.

    python benchmarks/rerank_latency.py -c configs/srd.yaml --queries 30 --repeats 2 --quality \\
        --caps 64 96 128 192 256 --cap 128
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class Recorder:
    """A scorer that records what it is asked and scores every pair 0 (the hybrid order stands)."""

    id = "recorder"

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def score(self, pairs: Any, max_tokens: int | None = None) -> np.ndarray:
        self.calls.append(list(pairs))
        return np.zeros(len(pairs))


def stage_pairs(cfg: Any, queries: list[str]) -> list[list[tuple[str, str]]]:
    """Each query's (query, passage) pairs as the rerank stage scores them (its first call: the query's head)."""
    from ragrig.retrieval.encoders import cross_encoder
    from ragrig.retrieval.search.retriever import Retriever

    rec = Recorder()
    real = cross_encoder.load_cross_encoder
    cross_encoder.load_cross_encoder = lambda *a, **k: rec
    try:
        retriever = Retriever(cfg)
        out = []
        for q in queries:
            rec.calls.clear()
            retriever.search(q, use_cache=False)
            out.append(rec.calls[0] if rec.calls else [])
    finally:
        cross_encoder.load_cross_encoder = real
    return out


def shape(model: Any, pairs: list[list[tuple[str, str]]], batch_size: int) -> dict[str, Any]:
    """Tokens per pair at the model's limit and the padding of batches, sorted by length or not."""
    total, query, passage, pad_sorted, pad_plain = [], [], [], [], []
    for ps in pairs:
        enc = model.encode(ps)
        lens = [len(ids) for ids, _ in enc]
        total += lens
        for ids, types in enc:
            first = types.index(1) if 1 in types else len(ids)
            query.append(first - 2)
            passage.append(len(ids) - first - 1)

        def padded(order: list[int]) -> int:
            return sum(max(lens[i] for i in order[lo : lo + batch_size]) * len(order[lo : lo + batch_size])
                       for lo in range(0, len(order), batch_size))

        pad_sorted.append(padded(sorted(range(len(lens)), key=lens.__getitem__)) / max(1, sum(lens)))
        pad_plain.append(padded(list(range(len(lens)))) / max(1, sum(lens)))

    def d(xs: list[int]) -> dict[str, float]:
        return {"p50": float(np.percentile(xs, 50)), "p95": float(np.percentile(xs, 95)), "max": float(max(xs)),
                "mean": float(np.mean(xs))}

    return {"pairs": len(total), "pairs_per_query": len(total) / max(1, len(pairs)), "tokens_total": d(total),
            "tokens_query": d(query), "tokens_passage": d(passage),
            "padding_sorted": float(np.mean(pad_sorted)), "padding_unsorted": float(np.mean(pad_plain))}


def latency(pairs: list[list[tuple[str, str]]], settings: dict[str, dict[str, Any]], repeats: int) -> dict[str, Any]:
    """Milliseconds to score each query's pairs (no cache), per setting, the settings interleaved per query."""
    from ragrig.retrieval.encoders.cross_encoder import OnnxCrossEncoder, RERANKER_EN

    folder = RERANKER_EN.path()
    sessions: dict[Any, Any] = {}
    scorers = {}
    for name, s in settings.items():
        if s["threads"] not in sessions:
            sessions[s["threads"]] = OnnxCrossEncoder(folder, "bench", 16, RERANKER_EN.max_tokens, s["threads"])
        scorers[name] = sessions[s["threads"]]
    for sc in sessions.values():  # the first run of a session allocates its buffers
        sc.score(pairs[0], 64)
    ms: dict[str, list[float]] = {name: [] for name in settings}
    for rep in range(repeats):
        for i, ps in enumerate(pairs):
            names = list(settings) if (rep + i) % 2 == 0 else list(reversed(settings))
            for name in names:
                s, sc = settings[name], scorers[name]
                sc.batch_size = s["batch_size"]
                t0 = time.perf_counter()
                sc.score(ps, s["cap"])
                ms[name].append((time.perf_counter() - t0) * 1000)
        print(f"  latency repeat {rep + 1}/{repeats} done (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    base = statistics.median(ms["today"])
    return {name: {**settings[name], "p50_ms": statistics.median(v), "p95_ms": float(np.percentile(v, 95)),
                   "ratio_p50_to_today": statistics.median(v) / base, "n": len(v)} for name, v in ms.items()}


def quality(cfg: Any, caps: list[int]) -> dict[str, Any]:
    """nDCG@10 (and R@10) of the whole test set: rerank off, then on at each cap, on one open index."""
    from ragrig.eval.evaluate import evaluate_testsets
    from ragrig.retrieval.search.retriever import Retriever

    retriever = Retriever(cfg)
    out: dict[str, Any] = {}
    for label, rr in [("off", {"enabled": False}), *[(f"cap {c}", {"enabled": True, "max_tokens": c}) for c in caps]]:
        variant = cfg.model_copy(update={"retrieval": cfg.retrieval.model_copy(
            update={"rerank": cfg.retrieval.rerank.model_copy(update=rr)})})
        t0 = time.perf_counter()
        reports = evaluate_testsets(variant, retriever=retriever, log=None)
        out[label] = {"ndcg@10": reports[0].overall["ndcg@10"], "recall@10": reports[0].overall["recall@10"],
                      "cases": len(reports[0].per_query), "seconds": time.perf_counter() - t0}
        print(f"  quality {label}: nDCG@10 {out[label]['ndcg@10']:.4f} ({out[label]['seconds']:.0f} s)",
              file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", "-c", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--queries", type=int, default=30, help="test queries timed (the first N)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--caps", type=int, nargs="*", default=[64, 96, 128, 192, 256])
    ap.add_argument("--cap", type=int, default=128, help="the cap the batch-size and thread settings use")
    ap.add_argument("--batch-sizes", type=int, nargs="*", default=[4, 20])
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--quality", action="store_true", help="also nDCG@10 per cap over the whole test set")
    ap.add_argument("--quality-caps", type=int, nargs="*", default=None, help="default: 512 and --caps")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from ragrig.configs.load import load_config
    from ragrig.eval.evaluate import load_testsets
    from ragrig.retrieval.encoders.cross_encoder import load_cross_encoder

    cfg = load_config(args.config, [*args.set, "mlflow.enabled=false", "retrieval.rerank.enabled=true"])
    ts = load_testsets(cfg)[0]
    result: dict[str, Any] = {"config": args.config, "set": args.set, "index": cfg.index_key(),
                              "testset": ts.name, "date": time.strftime("%Y-%m-%d %H:%M"),
                              "load_before": os.getloadavg(), "top_n": cfg.retrieval.rerank.top_n}
    if not args.no_latency:
        pairs = stage_pairs(cfg, [c.query for c in ts.cases[: args.queries]])
        model = load_cross_encoder(cfg.retrieval.rerank.model)
        result["shape"] = shape(model, pairs, cfg.retrieval.rerank.batch_size)
        settings = {"today": {"cap": 512, "batch_size": 16, "threads": None}}
        settings |= {f"cap {c}": {"cap": c, "batch_size": 16, "threads": None} for c in args.caps}
        settings |= {f"cap {args.cap}, batch {b}": {"cap": args.cap, "batch_size": b, "threads": None}
                     for b in args.batch_sizes}
        settings |= {f"cap {args.cap}, {t} thread(s)": {"cap": args.cap, "batch_size": 16, "threads": t}
                     for t in args.threads}
        result["latency"] = latency(pairs, settings, args.repeats)
    if args.quality:
        result["quality"] = quality(cfg, args.quality_caps or [512, *args.caps])
    result["load_after"] = os.getloadavg()
    out = Path(args.out or OUT / f"rerank_latency-{cfg.index.name or cfg.index_key()}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{ts.name}: load {result['load_before'][0]:.1f} -> {result['load_after'][0]:.1f}")
    if "shape" in result:
        s = result["shape"]
        print(f"{s['pairs']} pairs ({s['pairs_per_query']:.1f} a query); tokens a pair p50 {s['tokens_total']['p50']:.0f}"
              f" p95 {s['tokens_total']['p95']:.0f} max {s['tokens_total']['max']:.0f} (query p50 "
              f"{s['tokens_query']['p50']:.0f}, passage p50 {s['tokens_passage']['p50']:.0f}); padded/real tokens, "
              f"batches of {cfg.retrieval.rerank.batch_size}: sorted {s['padding_sorted']:.2f}, unsorted "
              f"{s['padding_unsorted']:.2f}\n")
        print("| setting | p50 ms | p95 ms | p50 / today |\n|---|---:|---:|---:|")
        for name, v in result["latency"].items():
            print(f"| {name} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} | {v['ratio_p50_to_today']:.2f} |")
    if "quality" in result:
        q = result["quality"]
        print("\n| rerank | nDCG@10 | R@10 | gain over off |\n|---|---:|---:|---:|")
        for name, v in q.items():
            print(f"| {name} | {v['ndcg@10']:.4f} | {v['recall@10']:.4f} | {v['ndcg@10'] - q['off']['ndcg@10']:+.4f} |")


if __name__ == "__main__":
    main()
