"""Replay a finished ``ragrig tune`` from what it logged: each candidate's per-case scores are read back from its
MLflow run's ``report.json``, and the selection (``eval.tune.run._choose``, the code ``ragrig tune`` runs) is
done again without evaluating anything: the same seed first (it must give the tune's own estimate exactly, a
check that the scores read back are the ones it chose from), then the honesty check for each ``--seeds`` (tune on
1-F of the cases, score the pick on the other F). Also a table of every candidate's overall metrics (R@10,
nDCG@10, ...) on all cases, as each candidate's ``ragrig eval`` report gave them.

    RAGRIG_HOME=HOME python benchmarks/tune_replay.py configs/tune/scifact-one-index.yaml TUNE.json \
        --fraction 0.5 --seeds 1 2 3 4 5 [--folds 5] --out benchmarks/results/tune-replay-scifact.json

Why: a tune's evaluation is its whole cost (SciFact with the rerank candidates: ~30 min on 2 busy cores), and
the honesty check over several splits needs none of it again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("space")
    ap.add_argument("tune_json", help="the tune's --output-json (its candidates' MLflow run ids)")
    ap.add_argument("--fraction", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--folds", type=int, default=None, help="folds for the honesty check (default: the tune's)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

    from mlflow.tracking import MlflowClient
    from ragrig.eval.tracking.store import tracking_uri
    from ragrig.eval.tune.folds import stratum
    from ragrig.eval.tune.run import _choose, load_cases
    from ragrig.eval.tune.space import load_space, resolve_space, with_options

    tune = json.loads(Path(args.tune_json).read_text())
    spec = with_options(load_space(args.space), folds=tune["folds"], seed=tune["seed"])
    items = resolve_space(spec)
    labels = [label for label, _, _ in items]
    by_label = {c["label"]: c for c in tune["candidates"]}
    if labels != list(by_label):
        sys.exit(f"{args.tune_json}: its candidates {list(by_label)} are not the space's {labels}")
    paths = list(spec.testsets or items[0][2].eval.testsets)
    sets, keys, tags = load_cases(paths)
    col = {k: i for i, k in enumerate(keys)}
    scores = np.full((len(items), len(keys)), np.nan)
    overall: dict[str, dict[str, float]] = {}
    client = MlflowClient(tracking_uri(items[0][2]))  # the store the tune logged to (its config's)
    for c, label in enumerate(labels):
        for run_id in by_label[label]["run_ids"]:
            report = json.loads(Path(client.download_artifacts(run_id, "report.json")).read_text())
            overall[label] = report["overall"]
            for q in report["per_query"]:
                key = f"{report['testset']}/{q['id']}" if len(sets) > 1 else q["id"]
                scores[c, col[key]] = q["metrics"][spec.metric]
    if np.isnan(scores).any():
        sys.exit(f"{int(np.isnan(scores).sum())} scores missing: a candidate's run lacks some cases")
    rows: dict[str, list] = {label: [] for label in labels}
    strata = [stratum(t) for t in tags]
    where = ", ".join(paths)
    same = _choose(spec, scores, items, rows, sets, tags, strata, None, where)
    assert abs(same.estimate - tune["estimate"]) < 1e-12 and same.picks == tune["picks"], (
        f"replay gives {same.estimate} / {same.picks}, the tune logged {tune['estimate']} / {tune['picks']}")
    hspec = with_options(spec, folds=args.folds) if args.folds else spec
    runs = [_choose(hspec.model_copy(update={"seed": s}), scores, items, rows, sets, tags, strata, args.fraction,
                    where).holdout for s in args.seeds]
    out = {"space": args.space, "tune_json": args.tune_json, "metric": spec.metric, "cases": len(keys),
           "replayed_estimate": same.estimate, "holdout_folds": hspec.folds, "holdout_runs": runs,
           "candidates_overall": overall}
    args.out.write_text(json.dumps(out, indent=1))
    print(f"replayed {spec.name}: estimate {same.estimate:.4f} (the tune's {tune['estimate']:.4f}), picks equal")
    print("| seed | pick | held-out score (default) | estimate [95 %] | held-out gain | estimated gain [95 %] |")
    print("|---:|---|---:|---:|---:|---:|")
    for h in runs:
        print(f"| {h['seed']} | {h['pick']} | {h['held_score']:.4f} ({h['held_default']:.4f}) | {h['estimate']:.4f} "
              f"[{h['estimate_ci'][0]:.4f}, {h['estimate_ci'][1]:.4f}] {'inside' if h['within'] else 'OUTSIDE'} | "
              f"{h['held_gain']:+.4f} | {h['gain']:+.4f} [{h['gain_ci'][0]:.4f}, {h['gain_ci'][1]:.4f}] "
              f"{'inside' if h['gain_within'] else 'OUTSIDE'} |")
    print(f"inside: score {sum(h['within'] for h in runs)}/{len(runs)}, gain {sum(h['gain_within'] for h in runs)}"
          f"/{len(runs)}")
    print("\n| candidate | R@10 | nDCG@10 | MRR@10 | R@100 |\n|---|---:|---:|---:|---:|")
    for label, m in overall.items():
        print(f"| {label} | {m.get('recall@10', float('nan')):.4f} | {m.get('ndcg@10', float('nan')):.4f} | "
              f"{m.get('mrr@10', float('nan')):.4f} | {m.get('recall@100', float('nan')):.4f} |")


if __name__ == "__main__":
    main()
