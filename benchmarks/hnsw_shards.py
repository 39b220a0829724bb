"""The seeded HNSW graph built in shards (issue 38): one graph on one thread, as every version had it, against the
same rows cut into shards and built by ingest's own step (``ingest.build.write_vector_files``) in this process and
on a Dask LocalCluster of ``--workers`` single-threaded worker processes, side by side in one run.

For each size, on the synthetic topic-clustered 384-d vectors of retrieval_latency.py:
- build seconds: one graph (one thread) / the shards on the workers (the cluster's start is reported apart, it
  is paid once per ingest) / the shards here, one after the other (up to ``--here-max`` chunks), and the ratios
  to the one graph;
- determinism: the shards' files built on the workers and here (sha256 of each), and a second build (here, or
  above ``--here-max`` on the workers again);
- search: recall@10 and @100 against exact search and the p50 latency of one query at ragrig's candidate depth
  (100), one graph vs the shards (every shard walked, the union rescored exactly).

    python benchmarks/hnsw_shards.py [--sizes 200000 1000000] [--shard-max-chunks 250000] [--workers 2]
                                      [--here-max 500000]

Prints a Markdown table, writes benchmarks/results/hnsw_shards.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from retrieval_latency import GENERATOR, _topics, synthetic_queries, synthetic_vectors  # noqa: E402
from vector_search import DEPTH, pct, recall  # noqa: E402

from ragrig.configs.load import load_config  # noqa: E402
from ragrig.retrieval.index import hnsw  # noqa: E402
from ragrig.retrieval.ingest.build import write_vector_files  # noqa: E402
from ragrig.retrieval.search.vector_search import ExactSearch, HnswSearch  # noqa: E402


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(folder.glob("vectors.hnsw*"))}


def one_size(n: int, shard_max: int, workers: int, queries: int, client: Any, here_max: int) -> dict[str, Any]:
    from ragrig.flows.runners import DaskClient

    rng = np.random.default_rng(GENERATOR["seed"])
    centroids, _, topic_of = _topics(n, rng)
    vecs = synthetic_vectors(n, rng, centroids, topic_of)
    _, qvecs = synthetic_queries(n, queries)
    cfg = load_config(None, ["corpus.path=.", "index.vector_search.mode=hnsw",
                             f"index.vector_search.hnsw.shard_max_chunks={shard_max}"])
    hc = cfg.index.vector_search.hnsw
    row: dict[str, Any] = {"chunks": n, "shards": len(hnsw.bounds(hc, n)), "workers": workers}
    with tempfile.TemporaryDirectory() as tmp:
        one, here, again, there = (Path(tmp) / name for name in ("one", "here", "again", "there"))
        for d in (one, here, again, there):
            d.mkdir()
        t0 = time.perf_counter()
        graph = hnsw.build(vecs, hc)
        row["one_graph_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        write_vector_files(cfg, there, vecs, vecs.shape[1], DaskClient(client))
        row["shards_on_workers_s"] = round(time.perf_counter() - t0, 1)
        row["ratio_workers"] = round(row["shards_on_workers_s"] / row["one_graph_s"], 3)
        row["files"] = digests(there)
        if n <= here_max:  # the shards in this process too, twice
            t0 = time.perf_counter()
            write_vector_files(cfg, here, vecs, vecs.shape[1])
            row["shards_here_s"] = round(time.perf_counter() - t0, 1)
            row["ratio_here"] = round(row["shards_here_s"] / row["one_graph_s"], 3)
            write_vector_files(cfg, again, vecs, vecs.shape[1])
            row["workers_equal_here"] = digests(here) == row["files"]
        else:  # above --here-max: the second build is a second one on the workers
            write_vector_files(cfg, again, vecs, vecs.shape[1], DaskClient(client))
        row["second_build_equal"] = digests(again) == row["files"]
        shards = [hnsw.load(there / name) for name in hnsw.file_names(row["shards"])]
        unit = np.load(there / "vectors.npy", mmap_mode="r")
        exact = ExactSearch(unit)
        single, sharded = HnswSearch(unit, [graph], hc.expansion_search), HnswSearch(unit, shards, hc.expansion_search)
        truth, found, ms = [], {"one": [], "shards": []}, {"one": [], "shards": []}
        for q in qvecs:  # one query at a time, interleaved, as a reader asks
            truth.append(exact.search(q[None], DEPTH, None)[0][0])
            for name, search in (("one", single), ("shards", sharded)):
                t0 = time.perf_counter()
                rows = search.search(q[None], DEPTH, None)[0][0]
                ms[name].append((time.perf_counter() - t0) * 1e3)
                found[name].append(rows)
        for name in ("one", "shards"):
            row[f"{name}_recall@10"] = recall(found[name], truth, 10)
            row[f"{name}_recall@100"] = recall(found[name], truth, 100)
            row[f"{name}_search_ms"] = pct(ms[name])
        del shards, unit, graph
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    ap.add_argument("--shard-max-chunks", type=int, default=250_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--here-max", type=int, default=500_000,
                    help="above this many chunks, skip the shards' build in this process (the second build is a "
                         "second one on the workers)")
    ap.add_argument("--output", type=Path, default=HERE / "results" / "hnsw_shards.json")
    args = ap.parse_args()
    from distributed import Client, LocalCluster
    from ragrig.flows.runners import SCHEDULER_HTTP

    t0 = time.perf_counter()
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1", scheduler_kwargs=SCHEDULER_HTTP) as cluster, Client(cluster) as client:
        cluster_s = round(time.perf_counter() - t0, 1)
        rows = [one_size(n, args.shard_max_chunks, args.workers, args.queries, client, args.here_max)
                for n in args.sizes]
    print(f"cluster start: {cluster_s} s ({args.workers} workers, once per ingest)\n")
    print("| chunks | shards | one graph, 1 thread | shards here | shards on the workers | recall@10 one / shards "
          "| recall@100 one / shards | search p50 ms one / shards | files: workers = here / a second build the same |")
    print("|---:|---:|---:|---:|---:|---|---|---|---|")
    for r in rows:
        here = f"{r['shards_here_s']} s ({r['ratio_here']}x)" if "shards_here_s" in r else "-"
        print(f"| {r['chunks']:,} | {r['shards']} | {r['one_graph_s']} s | {here} | "
              f"{r['shards_on_workers_s']} s ({r['ratio_workers']}x) | "
              f"{r['one_recall@10']} / {r['shards_recall@10']} | {r['one_recall@100']} / {r['shards_recall@100']} | "
              f"{r['one_search_ms']['p50']} / {r['shards_search_ms']['p50']} | "
              f"{r.get('workers_equal_here', '-')} / {r['second_build_equal']} |")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"cluster_start_s": cluster_s, "generator": GENERATOR,
                                       "shard_max_chunks": args.shard_max_chunks, "rows": rows}, indent=1) + "\n")
    print(f"\nwrote {args.output}")


if __name__ == "__main__":
    main()
