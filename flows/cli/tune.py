"""``ragrig tune``: choose a retrieval config from a declared space on the user's own test set, with nested
cross-validation, and write it only when its held-out gain over the default is significant."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, add_runner, check_output, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("tune", help="choose a config from a space by nested cross-validation on your test set")
    add_common(p)
    p.add_argument("space", metavar="FILE", nargs="?", default=None,
                   help="a space file (configs/tune/*.yaml: a sweep file plus folds/seed); without one, the built-in "
                   "space (configs/tune/first.yaml: fusion, depth, hops, section view, rerank, a second encoder) "
                   "on your --config and test sets")
    p.add_argument("--testset", "-t", action="append", default=[], help="test set YAML (default: the space's, "
                   "else eval.testsets)")
    p.add_argument("--folds", "-k", type=int, default=None, help="k of the k-fold cross-validation (space: folds)")
    p.add_argument("--seed", type=int, default=None, help="the folds' and bootstrap's seed (space: seed)")
    p.add_argument("--alpha", type=float, default=None, help="significance level for writing a winner (0.05)")
    p.add_argument("--no-stratify", action="store_true", help="folds by case only, not stratified by first tag")
    p.add_argument("--holdout-fraction", type=float, default=None, metavar="F",
                   help="honesty check: tune on 1-F of the cases, score the pick on the other F, write nothing")
    p.add_argument("--holdout-seeds", type=int, nargs="+", default=None, metavar="SEED",
                   help="repeat the honesty check for each seed (its split, folds and bootstrap) over the one "
                   "evaluation of every candidate")
    p.add_argument("--write", metavar="FILE", default=None,
                   help="where a significant winner's config goes (default: tuned-<space name>.yaml)")
    p.add_argument("--output-json", metavar="FILE")
    p.add_argument("--quiet", "-q", action="store_true")
    add_runner(p)
    p.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.tune.run import run_tune
    from ragrig.eval.tune.space import BUILT_IN, load_space, resolve_space, with_options
    from ragrig.flows.render.tune import print_tune, progress_bar

    spec = load_space(args.space or BUILT_IN)
    if args.space is None:  # one line, on stderr: stdout stays the result
        print(f"tuning the built-in space ({BUILT_IN.name}: fusion, candidate depth, hops, section view, rerank, "
              f"a second encoder) on {args.config or 'the default config'}; give a space FILE to choose your own",
              file=sys.stderr)
    update: dict[str, Any] = {k: v for k, v in (("folds", args.folds), ("seed", args.seed), ("alpha", args.alpha))
                              if v is not None}
    if args.no_stratify:
        update["stratify"] = False
    if args.config and not spec.base:
        update["base"] = str(Path(args.config).resolve())
    spec = with_options(spec, **update) if update else spec
    configs = resolve_space(spec, args.overrides)  # every candidate validated before any work
    testsets = [str(Path(t).resolve()) for t in args.testset] or None
    write = args.write or f"tuned-{spec.name}.yaml"
    check_output(write, "--write")  # the default path too, before any candidate runs
    from ragrig.flows.runners import cluster_executor

    with cluster_executor(configs[0][2]) as executor, progress_bar(len(configs), quiet=args.quiet) as step:
        result = run_tune(spec, args.overrides, configs=configs, testsets=testsets, holdout=args.holdout_fraction,
                          write=write, progress=False, step=step, holdout_seeds=args.holdout_seeds,
                          executor=executor)
    print_tune(result.to_dict())
    write_json(args.output_json, result.to_dict())
    return 0
