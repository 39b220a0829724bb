"""Local ingest against an earlier commit, side by side in one run: issue 38's "local ingest no slower" (the
synthetic BEIR corpus of ``scale_cluster.py``, its stand-in embeddings endpoint, ``ragrig ingest --runner local``
through Prefect, as a user runs it).

The earlier commit is checked out as a git worktree in a temp folder (its packages linked under its ``ragrig/`` as
this checkout's are, and run with ``PYTHONPATH`` pointing there); both sides run this checkout's
``scale_cluster.py`` (copied into the worktree: only the CLI it drives and the reader it opens are the commit's),
in pairs whose order alternates (this, ref / ref, this / ...), so that a machine's drift falls on both sides.

    python benchmarks/ingest_vs_ref.py --ref ac56779 --chunks 100000 --pairs 3     # ~10 min here

Prints a table (wall and stage seconds per run, and the ratio of the sums) and writes
benchmarks/results/ingest_vs_ref.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ingest_vs_ref.json"
PACKAGES = ("configs", "eval", "flows", "retrieval", "tasks")  # ragrig.<name> is <root>/<name>
COPIED = ("scale_cluster.py", "procs.py")
# stages compared; a stage one side lacks counts 0 there ("partitions" holds extract + chunk + the tables' spill
# since the one pipeline, "index:tables" before it)
STAGES = ("discover", "extract", "chunk", "partitions", "embed", "vectors", "index:tables", "index:bm25",
          "index:reader", "index", "total")


def worktree(ref: str, where: Path) -> Path:
    """``ref`` checked out at ``where``, importable as ``ragrig`` with ``PYTHONPATH=where``."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(where), ref], check=True,
                   capture_output=True, text=True)
    package = where / "ragrig"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"{ref}: no ragrig/__init__.py (a layout this script does not know)")
    for name in PACKAGES:
        link = package / name
        if not link.exists():
            link.symlink_to(Path("..") / name)
    for name in COPIED:
        shutil.copyfile(ROOT / "benchmarks" / name, where / "benchmarks" / name)
    return where


def one_run(side: str, root: Path, chunks: int, results: Path, tmp: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"SCALE_TMP": str(tmp), **({"PYTHONPATH": str(root)} if side == "ref" else {})})
    out = results / f"{side}.json"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "scale_cluster.py"), "--chunks", str(chunks),
                           "--runners", "local", "--out", str(out)], cwd=root, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0 or not out.is_file():
        raise SystemExit(f"{side}: scale_cluster.py failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    [row] = [r for r in json.loads(out.read_text())["rows"] if r.get("chunks") == chunks]
    if "error" in row:
        raise SystemExit(f"{side}: the ingest failed: {row['error']}")
    return {"side": side, "wall_s": round(row["wall_s"], 2), "stage_s": row["stage_s"],
            "driver_peak_mb": max(row["peak_mb"].get("driver", [0])),
            "known_items": row.get("read", {}).get("top1_is_the_document"), "load_avg_1m": row["load_avg_1m"]}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    sides = {s: [r for r in runs if r["side"] == s] for s in ("ref", "this")}
    sums = {s: {"wall_s": sum(r["wall_s"] for r in rs),
                **{k: sum(r["stage_s"].get(k, 0.0) for r in rs) for k in STAGES}} for s, rs in sides.items()}
    return {"sums": sums, "wall_ratio": sums["this"]["wall_s"] / sums["ref"]["wall_s"],
            "total_ratio": sums["this"]["total"] / sums["ref"]["total"]}


def print_table(runs: list[dict[str, Any]], summ: dict[str, Any], ref: str) -> None:
    print("| run | side | wall s | " + " | ".join(STAGES) + " | driver MiB | known items |")
    print("|---:|---|---:|" + "---:|" * len(STAGES) + "---:|---:|")
    for n, r in enumerate(runs, 1):
        stages = " | ".join(f"{r['stage_s'].get(k, 0.0):.1f}" for k in STAGES)
        print(f"| {n} | {'this' if r['side'] == 'this' else ref} | {r['wall_s']:.1f} | {stages} | "
              f"{r['driver_peak_mb']:,.0f} | {r['known_items']} |")
    s = summ["sums"]
    print(f"sums: wall {s['this']['wall_s']:.1f} s here against {s['ref']['wall_s']:.1f} s at {ref}: "
          f"{summ['wall_ratio']:.3f}x (the ingest's own total: {summ['total_ratio']:.3f}x)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True, help="the commit to compare against (e.g. ac56779)")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ingest-vs-ref-", dir=os.environ.get("SCALE_TMP")) as tmp:
        base = Path(tmp)
        ref_root = worktree(args.ref, base / "ref")
        try:
            results = base / "results"
            results.mkdir()
            for pair in range(args.pairs):
                order = [("this", ROOT), ("ref", ref_root)]
                for side, root in (order if pair % 2 == 0 else order[::-1]):
                    runs.append(one_run(side, root, args.chunks, results, base))
                    print(f"# {side}: wall {runs[-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(ref_root)],
                           capture_output=True)
    summ = summary(runs)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"ref": args.ref, "this": head, "chunks": args.chunks, "cpus": os.cpu_count(),
                                    "runs": runs, **summ}, indent=2) + "\n")
    print_table(runs, summ, args.ref)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
