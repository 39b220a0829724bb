"""Where an ingest's driver holds its memory, stage by stage: a synthetic BEIR corpus of N one-chunk documents
ingested in this process (``IngestPipeline``, the local executor) with the stand-in embeddings endpoint of
``scale_cluster.py`` (no model compute), a hook at every stage boundary and build part (the crash tests' points)
and a 50 ms RSS sampler. For each stage: its seconds, the RSS when it ended and the peak while it ran, so a change
that stops the driver holding something shows where (issue 38: the driver's memory must not grow with the corpus).

    python benchmarks/driver_memory.py --size 100000 --label after    # ~2 min here
    python benchmarks/driver_memory.py --size 20000 --set index.bm25.shards=4

Compare two code versions by running it on each (one after the other, alternated; the JSON keeps a row per
label and size). Writes benchmarks/results/driver_memory.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = ROOT / "benchmarks" / "results" / "driver_memory.json"


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


class Sampler:
    """RSS now and the peak since the last ``mark``, from a thread reading /proc every 50 ms."""

    def __init__(self) -> None:
        self.peak = rss_mib()
        self._lock = threading.Lock()  # the thread's max and a mark's reset, one at a time: else a reading taken
        self._stop = threading.Event()  # before a reset could be written after it (a stage's peak its next's)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.note(rss_mib())
            time.sleep(0.05)

    def note(self, mib: float) -> None:
        """A reading: the peak since the last mark is at least ``mib``."""
        with self._lock:
            self.peak = max(self.peak, mib)

    def mark(self) -> tuple[float, float]:
        with self._lock:
            now = rss_mib()
            peak, self.peak = max(self.peak, now), now
        return now, peak

    def stop(self) -> None:
        self._stop.set()


def run(size: int, partition: int, sets: list[str]) -> dict[str, Any]:
    import scale_cluster as sc

    with tempfile.TemporaryDirectory(prefix="driver-memory-", dir=os.environ.get("SCALE_TMP")) as tmp:
        work = Path(tmp)
        corpus, _ = sc.make_corpus(size, work / "corpus")
        with sc.Endpoint(work, lifetime_s=3600) as ep:
            os.environ.update({"RAGRIG_HOME": str(work / "home"), "OPENAI_API_KEY": "unused", "HF_HUB_OFFLINE": "1"})
            from ragrig.configs.load import load_config
            from ragrig.retrieval.ingest.pipeline import IngestPipeline

            cfg = load_config(None, [*sc.settings(corpus, ep.url, partition), *sets])
            sampler = Sampler()
            start_rss = rss_mib()
            rows: list[dict[str, Any]] = []
            last = [time.perf_counter()]

            def hook(point: str) -> None:
                t = time.perf_counter()
                now, peak = sampler.mark()
                if not point.startswith("before:"):  # a stage's end, or a build part's
                    rows.append({"point": point, "seconds": round(t - last[0], 2), "rss_mib": round(now),
                                 "peak_mib": round(peak)})
                last[0] = t

            t0 = time.perf_counter()
            stats = IngestPipeline(cfg, force=True, hook=hook).run()
            wall = time.perf_counter() - t0
            sampler.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"size": size, "partition_docs": partition, "sets": sets, "chunks": stats.chunks, "wall_s": round(wall, 2),
            "start_rss_mib": round(start_rss), "peak_rss_mib": round(peak),
            "peak_kb_per_chunk": round((peak - start_rss) * 1024 / max(stats.chunks, 1), 2), "points": rows,
            "stage_s": stats.seconds, "load_avg_1m": os.getloadavg()[0]}


def print_table(row: dict[str, Any]) -> None:
    print(f"{row['size']:,} chunks: wall {row['wall_s']} s, peak RSS {row['peak_rss_mib']:,} MiB "
          f"(start {row['start_rss_mib']} MiB: {row['peak_kb_per_chunk']} kB a chunk above it)")
    print("| point | seconds | RSS after MiB | peak during MiB |")
    print("|---|---:|---:|---:|")
    for p in row["points"]:
        print(f"| {p['point']} | {p['seconds']} | {p['rss_mib']:,} | {p['peak_mib']:,} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--partition", type=int, default=None, help="documents per partition (default size / 40)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="K=V")
    ap.add_argument("--label", default="current")
    args = ap.parse_args()
    if args.size < 1:
        ap.error(f"--size {args.size}: at least 1")
    row = {"label": args.label, **run(args.size, args.partition or max(1, args.size // 40), args.sets)}
    print_table(row)
    data = json.loads(OUT.read_text()) if OUT.is_file() else {"rows": []}
    data["rows"] = [r for r in data["rows"] if (r["label"], r["size"]) != (args.label, args.size)] + [row]
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
