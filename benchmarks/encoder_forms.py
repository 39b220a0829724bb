"""What running bge-small-en-v1.5 as a float torch model costs beside its packaged int8 ONNX form (and MiniLM, the
default encoder, for scale), side by side in one process: the published version's chunk texts embedded in
token-sorted batches as ingest does (a sample of ``--chunks``), and the config's test-set questions one at a time
as ``ragrig query`` does, rounds alternating which form goes first. The forms' vectors are compared too (cosine
of the same text). Needs the config's index published (``ragrig ingest -c CONFIG``).

    python benchmarks/encoder_forms.py -c configs/pydantic-docs.yaml [--chunks 256] [--repeats 2]

Prints a table; writes benchmarks/results/encoder_forms.json (``--out``).
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

FORMS = {"bge-small int8 ONNX": ("bge-small-en-v1.5", "onnx"), "bge-small float torch": ("bge-small-en-v1.5", "torch"),
         "MiniLM (torch)": ("all-MiniLM-L6-v2", "torch")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-c", "--config", default="configs/pydantic-docs.yaml")
    ap.add_argument("--chunks", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "encoder_forms.json"))
    args = ap.parse_args(argv)

    import numpy as np
    from ragrig.configs.load import load_config
    from ragrig.configs.models import EmbeddingConfig
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.embedding import Embedder
    from ragrig.retrieval.index.version import IndexVersion

    cfg = load_config(args.config, ["eval.ragas=false", "mlflow.enabled=false"])
    version = IndexVersion.current(cfg)
    try:
        texts = [c.search_text for c in version.chunks]
    finally:
        version.release()
    step = max(1, len(texts) // args.chunks)
    texts = texts[::step][: args.chunks]
    queries = [c.query for p in cfg.eval.testsets for c in load_testset(p).cases]
    encoders = {name: Embedder(EmbeddingConfig(model=m, backend=b)) for name, (m, b) in FORMS.items()}
    for e in encoders.values():
        e.encode_queries(["warm-up"])  # loading, the converted copy's first conversion, the forward check
    ordered = {}  # each encoder's texts by its own token count, as ingest orders them (not timed)
    for name, e in encoders.items():
        tokens = e.count_tokens(texts)
        ordered[name] = sorted(range(len(texts)), key=lambda i: (tokens[i], i))
    docs_s: dict[str, list[float]] = {n: [] for n in encoders}
    query_ms: dict[str, list[float]] = {n: [] for n in encoders}
    vectors: dict[str, Any] = {}
    names = list(encoders)
    for i in range(args.repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            e = encoders[name]
            t0 = time.perf_counter()
            got = e.encode_sorted([texts[i] for i in ordered[name]])
            vectors[name] = got[np.argsort(ordered[name])]  # back in the sample's order: the forms compare row by row
            docs_s[name].append(time.perf_counter() - t0)
            for q in queries:
                t0 = time.perf_counter()
                e.encode_queries([q])
                query_ms[name].append((time.perf_counter() - t0) * 1000)
    a, b = vectors["bge-small int8 ONNX"], vectors["bge-small float torch"]
    cos = (np.asarray(a) * np.asarray(b)).sum(axis=1)
    rows = []
    base = statistics.median(docs_s["bge-small int8 ONNX"])
    for name in names:
        med = statistics.median(docs_s[name])
        rows.append({"form": name, "model_id": encoders[name].id, "chunks": len(texts),
                     "chunks_per_s": len(texts) / med, "docs_ratio_vs_int8": med / base,
                     "query_p50_ms": statistics.median(query_ms[name]), "queries": len(queries)})
    print(f"{len(texts)} chunks of {args.config}, {len(queries)} queries, {args.repeats} alternated rounds")
    print(f"{'form':24} {'chunks/s':>9} {'time vs int8':>13} {'query p50 ms':>13}")
    for r in rows:
        print(f"{r['form']:24} {r['chunks_per_s']:9.1f} {r['docs_ratio_vs_int8']:12.2f}x {r['query_p50_ms']:13.1f}")
    print(f"bge-small int8 vs float, the same chunk: cosine min {cos.min():.4f}, mean {cos.mean():.4f}")
    out = {"config": args.config, "rows": rows, "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
