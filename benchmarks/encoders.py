"""Encoders side by side, in one process and one run: MiniLM (sentence-transformers, torch) and bge-small-en-v1.5
(int8 ONNX, onnxruntime + tokenizers), or any ``--models``.

1. throughput: the same texts (SciFact abstracts, title + text) through ``Embedder.encode_sorted`` in token
   order, as ingest embeds them; texts/s and tokens/s (the tokens each model reads: its own tokenizer, capped at
   its window), rounds alternated between the models so a load change on a shared machine hits both; ratios;
2. query latency: SciFact's test queries (``Embedder.encode_queries``, the query prefix included), each alone
   (p50/p95 of a batch of 1) and all in one call (a batch of 300);
3. a full SciFact ingest per model into its own fresh ragrig home (cold extraction and embedding caches), with
   the chunks it made: how many documents the window split, and the chunks over the window.

The homes are kept (``--home``), so ``ragrig eval`` can reuse the index:
    RAGRIG_HOME=<home>/<model> ragrig eval -c configs/scifact.yaml --set embedding.model=<model> ...
Prints a table and writes JSON to benchmarks/results/encoders.json.

    python benchmarks/encoders.py                         # --home /tmp/ragrig-encoders
    python benchmarks/encoders.py --no-ingest --texts 200
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
if not SCIFACT.is_dir():
    SCIFACT = ROOT.parents[1] / "shared" / "datasets" / "scifact"


def texts_and_queries(n: int) -> tuple[list[str], list[str]]:
    """Every (5183 // n)-th SciFact abstract as ingest embeds a one-section document, and the test queries."""
    lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    step = max(1, len(lines) // n)
    texts = []
    for line in lines[::step][:n]:
        rec = json.loads(line)
        texts.append(f"{rec['title']}\n{rec['text']}".strip())
    test_ids = {ln.split("\t")[0] for ln in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    queries = [q["text"] for q in map(json.loads, (SCIFACT / "queries.jsonl").read_text().splitlines())
               if q["_id"] in test_ids]
    return texts, queries


def throughput(embedders: dict, texts: list[str], rounds: int) -> dict:
    out: dict = {}
    for name, emb in embedders.items():
        tokens = emb.count_tokens(texts)
        order = sorted(range(len(texts)), key=lambda i: -tokens[i])
        out[name] = {"texts": len(texts), "tokens_read": sum(min(t, emb.window) for t in tokens),
                     "tokens": sum(tokens), "over_window": sum(t > emb.window for t in tokens), "seconds": [],
                     "_ordered": [texts[i] for i in order]}
        emb.encode(texts[:2])  # warm
    for _ in range(rounds):
        for name, emb in embedders.items():
            t0 = time.perf_counter()
            emb.encode_sorted(out[name]["_ordered"], prefix=emb.cfg.document_prefix)
            out[name]["seconds"].append(round(time.perf_counter() - t0, 3))
    for row in out.values():
        del row["_ordered"]
        best = min(row["seconds"])
        row["texts_per_s"] = round(row["texts"] / best, 2)
        row["tokens_per_s"] = round(row["tokens_read"] / best, 1)
    return out


def query_latency(embedders: dict, queries: list[str]) -> dict:
    out = {}
    for name, emb in embedders.items():
        emb.encode_queries(queries[:2])
        single = []
        for q in queries:
            t0 = time.perf_counter()
            emb.encode_queries([q])
            single.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        emb.encode_queries(queries)
        whole = (time.perf_counter() - t0) * 1000
        single.sort()
        out[name] = {"queries": len(queries), "batch1_p50_ms": round(statistics.median(single), 2),
                     "batch1_p95_ms": round(single[int(0.95 * (len(single) - 1))], 2),
                     f"batch{len(queries)}_total_ms": round(whole, 1),
                     f"batch{len(queries)}_per_query_ms": round(whole / len(queries), 2)}
    return out


def ingest(model: str, home: Path) -> dict:
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    shutil.rmtree(home, ignore_errors=True)
    cfg = load_config(str(ROOT / "configs" / "scifact.yaml"),
                      [f"embedding.model={model}", "mlflow.enabled=false", f"home={home}"])
    t0 = time.perf_counter()
    stats = IngestPipeline(cfg).run()
    wall = time.perf_counter() - t0
    chunks = IndexVersion.current(cfg).chunks
    per_doc: dict[str, int] = {}
    for c in chunks:
        per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
    return {"seconds": round(wall, 1), "stages_s": {k: round(v, 1) for k, v in stats.seconds.items()},
            "documents": len(per_doc), "chunks": len(chunks), "docs_split": sum(n > 1 for n in per_doc.values()),
            "chunks_over_window": stats.chunks_over_window, "index_key": cfg.index_key(), "home": str(home)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["all-MiniLM-L6-v2", "bge-small-en-v1.5"])
    ap.add_argument("--texts", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--home", default="/tmp/ragrig-encoders", help="scratch homes, one per model (never the "
                    "shared one)")
    ap.add_argument("--no-ingest", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "encoders.json"))
    args = ap.parse_args()

    from ragrig.configs.models import EmbeddingConfig
    from ragrig.retrieval.embedding import Embedder

    texts, queries = texts_and_queries(args.texts)
    embedders, load_s = {}, {}
    for m in args.models:
        t0 = time.perf_counter()
        embedders[m] = Embedder(EmbeddingConfig(model=m))
        _ = embedders[m].model
        load_s[m] = round(time.perf_counter() - t0, 2)
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "load_avg_start": os.getloadavg()},
              "models": {m: {"id": e.id, "window": e.window, "dim": e.dim, "load_s": load_s[m],
                             "query_prefix": e.query_prefix} for m, e in embedders.items()}}
    result["throughput"] = throughput(embedders, texts, args.rounds)
    result["query_latency"] = query_latency(embedders, queries)
    embedders.clear()
    if not args.no_ingest:
        result["ingest"] = {m: ingest(m, Path(args.home) / m) for m in args.models}
    result["machine"]["load_avg_end"] = os.getloadavg()
    base = args.models[0]
    for m in args.models[1:]:
        tp, b = result["throughput"], result["throughput"][base]
        result.setdefault("ratios", {})[f"{m} / {base}"] = {
            "texts_per_s": round(tp[m]["texts_per_s"] / b["texts_per_s"], 2),
            "tokens_per_s": round(tp[m]["tokens_per_s"] / b["tokens_per_s"], 2),
            "ingest_seconds": round(result["ingest"][m]["seconds"] / result["ingest"][base]["seconds"], 2)
            if "ingest" in result else None,
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"wrote {args.out}")
    return 0


def render(r: dict) -> str:
    rows = [f"{'':34s}" + "".join(f"{m:>22s}" for m in r["models"])]

    def line(label: str, values: list) -> None:
        rows.append(f"{label:34s}" + "".join(f"{v!s:>22s}" for v in values))

    ms = list(r["models"])
    line("window (tokens)", [r["models"][m]["window"] for m in ms])
    line("load (s)", [r["models"][m]["load_s"] for m in ms])
    tp = r["throughput"]
    line(f"encode: texts/s ({tp[ms[0]]['texts']} abstracts)", [tp[m]["texts_per_s"] for m in ms])
    line("encode: tokens/s (read)", [tp[m]["tokens_per_s"] for m in ms])
    line("encode: texts over window", [tp[m]["over_window"] for m in ms])
    ql = r["query_latency"]
    for key in ql[ms[0]]:
        if key != "queries":
            line(f"query {key}", [ql[m][key] for m in ms])
    for key in ("seconds", "documents", "chunks", "docs_split", "chunks_over_window"):
        if "ingest" in r:
            line(f"SciFact ingest: {key}", [r["ingest"][m][key] for m in ms])
    for pair, ratio in r.get("ratios", {}).items():
        rows.append(f"ratio {pair}: {ratio}")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
