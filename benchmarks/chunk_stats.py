"""Chunk counts and token-length distributions at several header levels, in one ragrig home.

Ingests the corpus once per ``chunking.max_header_level`` (the embedding cache is shared, so a
section whose text is the same at two levels is embedded once), then reports per level: chunks,
token percentiles (model tokens of the embedded text), chunks over the model window, and how
many chunks were embedded versus how many distinct chunk texts exist across all levels so far.
Writes benchmarks/results/chunks_<name>.json.

    python benchmarks/chunk_stats.py --config configs/srd.yaml --levels 2 3 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=None)
    ap.add_argument("--levels", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--home", default=None, help="ragrig home to use (default: a fresh temp dir)")
    args = ap.parse_args()
    if args.home:
        os.environ["RAGRIG_HOME"] = args.home
    else:
        import tempfile

        os.environ["RAGRIG_HOME"] = tempfile.mkdtemp(prefix="ragrig-chunks-")

    from ragrig.configs.load import load_config
    from ragrig.retrieval.embedding import Embedder
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    rows = []
    distinct: set[str] = set()
    embedded_total = 0
    window = None
    name = "corpus"
    for level in args.levels:
        cfg = load_config(args.config, [f"chunking.max_header_level={level}", "eval.testsets=[]"])
        name = cfg.index.name or Path(cfg.corpus.path).name
        t0 = time.perf_counter()
        stats = IngestPipeline(cfg, progress=True).run()
        secs = time.perf_counter() - t0
        chunks = IndexVersion.current(cfg).chunks
        window = window or Embedder(cfg.embedding).window
        toks = np.array([c.tokens for c in chunks])
        distinct.update(c.sha256 for c in chunks)
        embedded_total += stats.chunks_embedded
        rows.append({
            "max_header_level": level,
            "documents": stats.docs_seen,
            "failed": stats.docs_failed,
            "chunks": len(chunks),
            "split_pieces": sum(1 for c in chunks if c.part),
            "tokens_min": int(toks.min()),
            "tokens_p50": float(np.percentile(toks, 50)),
            "tokens_p90": float(np.percentile(toks, 90)),
            "tokens_p99": float(np.percentile(toks, 99)),
            "tokens_max": int(toks.max()),
            "over_window": int((toks > window).sum()),
            "embedded_this_level": stats.chunks_embedded,
            "embedded_so_far": embedded_total,
            "distinct_texts_so_far": len(distinct),
            "seconds": round(secs, 1),
        })
    out = ROOT / "benchmarks" / "results" / f"chunks_{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"corpus": name, "window": window, "levels": rows}, indent=2) + "\n")
    cols = ["max_header_level", "documents", "chunks", "split_pieces", "tokens_min", "tokens_p50", "tokens_p90",
            "tokens_p99", "tokens_max", "over_window", "embedded_this_level", "embedded_so_far",
            "distinct_texts_so_far", "seconds"]
    print(f"\nchunking {name} (model window {window} tokens)")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
