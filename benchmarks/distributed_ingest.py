"""`ragrig ingest` with the local (thread) runner against `flow.runner: dask` with N workers (a LocalCluster
of N single-threaded worker processes), on one corpus, one after the other on the same machine: wall time of
each command (a fresh process and a fresh home each: nothing cached), their ratio, and whether the two versions
are the same: chunks (ids, order, text), documents, BM25 top-100 of every test query, vectors (max |diff|) and
the evaluation metrics of `ragrig eval` over each. Prints a table and writes
benchmarks/results/distributed_ingest_<name>.json.

    python benchmarks/distributed_ingest.py --config configs/scifact.yaml --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
BIN = Path(sys.executable).parent


def ragrig(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(BIN / "ragrig"), *args], check=True, stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - t0, 2)


def compare(config: str, local: list[str], dask: list[str], queries: list[str]) -> dict:
    import numpy as np
    from ragrig.configs.load import load_config
    from ragrig.retrieval.index.bm25 import Bm25Index
    from ragrig.retrieval.index.version import IndexVersion

    out: dict = {}
    a, b = (IndexVersion.current(load_config(config, o)) for o in (local, dask))
    ca, cb = a.chunks, b.chunks
    out["chunks"] = [len(ca), len(cb)]
    out["chunks_equal"] = [c.to_dict() for c in ca] == [c.to_dict() for c in cb]
    out["documents_equal"] = [d.to_dict() for d in a.documents()] == [d.to_dict() for d in b.documents()]
    out["keywords_equal"] = a.keywords == b.keywords
    cfg = load_config(config, local)
    rankings = []
    for v in (a, b):
        bm = Bm25Index.load(v.bm25_dir, cfg.index.bm25)
        ids = [c.chunk_id for c in v.chunks]
        rankings.append([[ids[i] for i, _ in bm.search(bm.tokenizer(q), 100)] for q in queries])
    out["bm25_queries"] = len(queries)
    out["bm25_top100_equal"] = rankings[0] == rankings[1]
    va, vb = np.asarray(a.vectors), np.asarray(b.vectors)
    out["vectors_max_abs_diff"] = float(np.abs(va - vb).max()) if va.shape == vb.shape else None
    out["vectors_within_1e-6"] = out["vectors_max_abs_diff"] is not None and out["vectors_max_abs_diff"] <= 1e-6
    return out


def test_queries(config: str) -> list[str]:
    from ragrig.configs.load import load_config

    cfg = load_config(config, [])
    folder = Path(cfg.eval.testsets[0])
    wanted = {line.split("\t")[0] for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    rows = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines() if line.strip()]
    return [r["text"] for r in rows if str(r["_id"]) in wanted]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/scifact.yaml")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--root", help="where the two homes go (default: a temp folder)")
    args = ap.parse_args()
    name = Path(args.config).stem
    root = Path(args.root or tempfile.mkdtemp(prefix="ragrig-dist-"))
    core = ["retrieval.fusion.weights.vector2=0"]  # the partitions' scaling; the second encoder: views_cost.py
    runs = {"local": [f"home={root / 'local'}", *core],
            "dask": [f"home={root / 'dask'}", "flow.runner=dask", f"flow.workers={args.workers}", *core]}
    result: dict = {"corpus": name, "workers": args.workers, "machine": {
        "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    for label, sets in runs.items():
        flags = [x for s in sets for x in ("--set", s)]
        stats_file = root / f"{label}-ingest.json"
        load_before = [round(x, 2) for x in os.getloadavg()]  # a shared machine: say how busy it was
        wall = ragrig("ingest", "-c", args.config, "-q", "--output-json", str(stats_file), *flags)
        stats = json.loads(stats_file.read_text())
        eval_file = root / f"{label}-eval.json"
        ragrig("eval", "-c", args.config, "--no-prefect", "--output-json", str(eval_file), *flags)
        report = json.loads(eval_file.read_text())
        result[label] = {"command": " ".join(["ragrig ingest -c", args.config, "-q", *flags]), "wall_s": wall,
                         "loadavg_before": load_before, "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                         "stage_s": stats["seconds"], "chunks": stats["chunks"],
                         "chunks_embedded": stats["chunks_embedded"], "metrics": report["overall"],
                         "top10": [row["top"] for row in report["per_query"]]}
        print(f"{label}: {wall} s", flush=True)
    result["ratio_dask_over_local"] = round(result["dask"]["wall_s"] / result["local"]["wall_s"], 3)
    result["equal"] = compare(args.config, runs["local"], runs["dask"], test_queries(args.config))
    result["equal"]["metrics_equal"] = result["local"]["metrics"] == result["dask"]["metrics"]
    result["equal"]["eval_top_equal"] = (
        [[h["chunk_id"] for h in t] for t in result["local"]["top10"]]
        == [[h["chunk_id"] for h in t] for t in result["dask"]["top10"]])
    for label in runs:
        del result[label]["top10"]
    out = ROOT / "benchmarks" / "results" / f"distributed_ingest_{name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("\n| runner | wall s | chunks | embedded | nDCG@10 |\n|---|---|---|---|---|")
    for label in runs:
        r = result[label]
        print(f"| {label} | {r['wall_s']} | {r['chunks']} | {r['chunks_embedded']} | {r['metrics'].get('ndcg@10')} |")
    print(f"\nratio dask/local: {result['ratio_dask_over_local']}")
    print(json.dumps(result["equal"], indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
