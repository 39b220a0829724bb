"""Does the gate cry wolf? Rebuild a corpus's index N times from scratch with nothing changed, evaluate each
build, and gate every build against a baseline made from the first.

Each rebuild is a fresh ragrig home (no embedding or extraction cache), one `ragrig ingest` process and one
`ragrig eval` process, exactly as a user or CI would run them, with the default vector search. With
``--chroma`` each build is also evaluated with `index.vector_search.mode=chroma` (the same version, searched
through Chroma's HNSW as every ragrig before this one did), and gated against the first build's Chroma run: the
noise the default removes.

    python benchmarks/rebuild_gate.py [-c configs/srd.yaml] [--rebuilds 5] [--chroma] [--label srd]

Prints a Markdown table (per build: nDCG@10, recall@10, MRR@10, the per-query table hashes of
benchmarks/hash_eval.py, the gate's verdict and its WARN/BLOCK checks) and writes
benchmarks/results/rebuild_gate-LABEL.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RAGRIG = Path(sys.executable).with_name("ragrig")


def table_hashes(run: dict[str, Any]) -> tuple[str, str]:
    """benchmarks/hash_eval.py's two hashes: per-query metrics; and those plus top hits, scores, misses."""
    rows = [[q["id"], sorted(q["metrics"].items()),
             [(t["chunk_id"], t["score"], t["relevant"], t["hop"]) for t in q["top"]],
             q["missed@10"], q["normalized"], q["expansions"]] for q in run["per_query"]]
    metrics = hashlib.sha256(json.dumps([[x[0], x[1]] for x in rows]).encode()).hexdigest()[:16]
    return metrics, hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def ragrig(home: Path, *args: str) -> None:
    env = {**os.environ, "RAGRIG_HOME": str(home)}
    subprocess.run([str(RAGRIG), *args], env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)


def evaluate(home: Path, config: list[str], out: Path, *sets: str) -> dict[str, Any]:
    ragrig(home, "eval", *config, "--no-prefect", "--set", "mlflow.enabled=false", *sum((["--set", s] for s in sets),
                                                                                        []), "--output-json", str(out))
    data = json.loads(out.read_text())
    return data["runs"][0] if "runs" in data else data


def gate(base: dict[str, Any], cand: dict[str, Any], policy: Any) -> dict[str, Any]:
    from ragrig.eval.gate import judge

    r = judge(base, cand, policy)
    return {"verdict": r.verdict, "not_pass": [f"{c.verdict} {c.name}: {c.reason}" for c in r.checks
                                               if c.verdict != "PASS"], "search_note": r.search_note}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-c", "--config", default=None, help="a ragrig config (default: the embedded defaults: the sample)")
    ap.add_argument("--rebuilds", type=int, default=5)
    ap.add_argument("--chroma", action="store_true", help="also evaluate each build through Chroma's HNSW")
    ap.add_argument("--label", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the homes (in the temp dir)")
    args = ap.parse_args()
    label = args.label or (Path(args.config).stem if args.config else "sample")
    config = ["-c", str(Path(args.config).resolve())] if args.config else []
    modes = ["default"] + (["chroma"] if args.chroma else [])
    from ragrig.eval.gate import Policy, load_policy

    # make test's policy for the sample (its must-pass cases are sample cases); its metric rules elsewhere
    policy = load_policy(ROOT / "configs" / "gate" / "default.yaml")
    if args.config:
        policy = Policy(**{**policy.model_dump(), "must_pass": []})
    builds: list[dict[str, Any]] = []
    base: dict[str, dict[str, Any]] = {}
    for i in range(1, args.rebuilds + 1):
        home = Path(tempfile.mkdtemp(prefix=f"ragrig-rebuild-{label}-{i}-"))
        t0 = time.perf_counter()
        ragrig(home, "ingest", *config, "--no-prefect", "--quiet")
        row: dict[str, Any] = {"build": i, "ingest_s": round(time.perf_counter() - t0, 1)}
        for mode in modes:
            sets = ["index.vector_search.mode=chroma"] if mode == "chroma" else []
            t0 = time.perf_counter()
            run = evaluate(home, config, home / f"eval-{mode}.json", *sets)
            eval_s = round(time.perf_counter() - t0, 2)
            base.setdefault(mode, run)
            m, full = table_hashes(run)
            row[mode] = {"search": run["index"].get("vector_search"), "ndcg@10": run["overall"]["ndcg@10"],
                         "recall@10": run["overall"]["recall@10"], "mrr@10": run["overall"]["mrr@10"],
                         "metrics_hash": m, "full_hash": full, "gate": gate(base[mode], run, policy),
                         "eval_s": eval_s, "query_ms": run["latency_ms"]}
        builds.append(row)
        print(json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    lines = [f"Rebuilds of {label} from scratch, each gated against the first "
             f"(`python benchmarks/rebuild_gate.py {' '.join(sys.argv[1:])}`):", "",
             "| build | search | nDCG@10 | recall@10 | MRR@10 | metrics hash | full hash | gate | WARN/BLOCK checks | "
             "eval s | query p50 ms |", "|---:|---|---:|---:|---:|---|---|---|---|---:|---:|"]
    for b in builds:
        for mode in modes:
            r = b[mode]
            lines.append(f"| {b['build']} | {r['search']} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | "
                         f"{r['mrr@10']:.4f} | {r['metrics_hash']} | {r['full_hash']} | {r['gate']['verdict']} | "
                         f"{'; '.join(r['gate']['not_pass']) or '-'} | {r['eval_s']} | "
                         f"{r['query_ms'].get('p50', 0):.2f} |")
    summary = {mode: {"distinct_full_hashes": len({b[mode]["full_hash"] for b in builds}),
                      "verdicts": [b[mode]["gate"]["verdict"] for b in builds]} for mode in modes}
    lines += ["", "; ".join(f"{mode}: {s['distinct_full_hashes']} distinct result table(s), verdicts "
                                f"{', '.join(s['verdicts'])}" for mode, s in summary.items())]
    print("\n".join(lines))
    out = HERE / "results" / f"rebuild_gate-{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "label": label, "config": args.config,
                               "builds": builds, "summary": summary, "table": "\n".join(lines)}, indent=1) + "\n")
    return 0 if all(len(set(s["verdicts"]) - {"PASS"}) == 0 for m, s in summary.items() if m == "default") else 1


if __name__ == "__main__":
    raise SystemExit(main())
