"""Does an encoder give a short text the same bits whatever batch it is encoded in? (issue 37: hops as batches)

An SRD 5.1 evaluation with hops spends most of its extra time encoding the hop's missing items, which are keyword-
library terms. Their vectors could be made once at ingest and read at query time, but only without changing a
bit of any result if each encoder gives a text the same vector alone, in a batch of terms, and in a batch that
also holds long queries (what a hop's ``search_many`` sends). Per config and encoder (``embedding.model``, and
``retrieval.views.second_model`` when its view is fused): the first ``--terms`` library terms (sorted) through
``encode_queries`` alone, as one batch, and after the config's first six test-set queries in one batch; counts
the rows whose float32 bits are identical, and the largest difference.

    python benchmarks/batch_invariance.py configs/srd.yaml configs/pydantic-docs.yaml [--terms 60]

Needs each config's published index (the keyword library). Prints a table; writes
benchmarks/results/batch_invariance.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def same_rows(a: Any, b: Any) -> int:
    import numpy as np

    return int((np.ascontiguousarray(a).view(np.uint32) == np.ascontiguousarray(b).view(np.uint32)).all(axis=1).sum())


def measure(path: str, overrides: list[str], n_terms: int) -> list[dict[str, Any]]:
    import numpy as np
    from ragrig.configs.load import load_config
    from ragrig.eval.testset import load_testset
    from ragrig.retrieval.embedding import Embedder
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.views import second_embedder
    from ragrig.retrieval.machine import kind

    cfg = load_config(path, overrides)
    version = IndexVersion.current(cfg)
    terms = sorted({t["term"] for t in version.keywords.get("terms", [])})[:n_terms]
    queries = [c.query for c in load_testset(cfg.eval.testsets[0]).cases][:6] if cfg.eval.testsets else []
    encoders = {cfg.embedding.model: Embedder(cfg.embedding)}
    r = cfg.retrieval
    if r.fusion.weights.get("vector2", 0) and r.views.second_model:
        encoders[r.views.second_model] = second_embedder(cfg.embedding, r.views.second_model,
                                                         version.layout.cache_dir / "model-digests.json",
                                                         r.views.second_backend)
    rows = []
    for name, e in encoders.items():
        alone = np.vstack([e.encode_queries([t]) for t in terms])
        batch = e.encode_queries(terms)
        mixed = e.encode_queries(queries + terms)[len(queries):]
        rows.append({"config": path, "encoder": name, "terms": len(terms), "machine": kind(),
                     "alone_eq_batch": same_rows(alone, batch), "alone_eq_mixed": same_rows(alone, mixed),
                     "batch_eq_mixed": same_rows(batch, mixed),
                     "max_abs_diff": float(max(np.abs(alone - batch).max(), np.abs(alone - mixed).max()))})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--terms", type=int, default=60)
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "batch_invariance.json"))
    args = ap.parse_args()
    rows = [row for path in args.configs for row in measure(path, args.sets, args.terms)]
    print(f"{'config':28} {'encoder':28} {'terms':>5} {'alone=batch':>11} {'alone=mixed':>11} {'max diff':>9}")
    for x in rows:
        print(f"{x['config']:28} {x['encoder']:28} {x['terms']:5d} {x['alone_eq_batch']:11d} "
              f"{x['alone_eq_mixed']:11d} {x['max_abs_diff']:9.2g}")
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
