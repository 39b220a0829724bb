"""``ragrig eval`` (evaluate test sets on the published index, log to MLflow) and ``ragrig run`` (the main job:
ingest, then eval). Both run ``eval.evaluate.evaluate_testsets``: directly, or as the evaluate Prefect flow."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import REPEATS_MAX, RagrigConfig
from ragrig.flows.cli.common import add_common, add_runner, prefect_home, write_json

if TYPE_CHECKING:
    from ragrig.eval.testset import TestSet


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="evaluate retrieval on YAML test sets and log to MLflow")
    add_common(p)
    p.add_argument("--testset", "-t", action="append", default=[], help="test set YAML (default: eval.testsets)")
    p.add_argument("-n", "--repeats", type=int, default=None, help="run N times: latency percentiles and variance")
    p.add_argument("--max-hops", type=int, default=None, metavar="N",
                   help="force multi-hop depth N for every case (default: per case, else retrieval.max_hops)")
    p.add_argument("--case", action="append", default=[], metavar="ID",
                   help="run only this case (repeatable) and print its hits with relevance marks and per-source "
                        "ranks (not logged to MLflow)")
    p.add_argument("--include-drafts", action="store_true",
                   help="evaluate cases marked draft: true too (left out by default; runs without Prefect)")
    p.add_argument("--output-json", metavar="FILE")
    p.add_argument("--run-name", default=None)
    p.add_argument("--no-prefect", action="store_true", help="run without a Prefect flow")
    add_runner(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("run", help="the main job: ingest the corpus, evaluate its test sets, log to MLflow")
    add_common(p)
    p.add_argument("--run-name", default=None)
    p.add_argument("--output-json", metavar="FILE", help="write the evaluation report as JSON")
    p.add_argument("--no-prefect", action="store_true", help="run without Prefect flows")
    add_runner(p)
    p.set_defaults(func=cmd_run)


def evaluate(cfg: RagrigConfig, args: argparse.Namespace, testsets: list[TestSet], paths: list[str],
             repeats: int | None = None, max_hops: int | None = None) -> list[dict[str, Any]]:
    """Evaluate the validated ``testsets`` (from ``paths``; empty: ``eval.testsets``) and print each report."""
    if args.no_prefect:
        from ragrig.eval.evaluate import evaluate_testsets
        from ragrig.eval.tracking.runs import RunOptions

        reports = evaluate_testsets(cfg, testsets, repeats=repeats, max_hops=max_hops,
                                    log=RunOptions(run_name=args.run_name))
        results = [r.to_dict() for r in reports]
    else:
        from ragrig.retrieval.index.version import IndexVersion

        IndexVersion.current(cfg)  # no published index: one line now, not after a Prefect flow has started
        prefect_home()
        from ragrig.flows.evaluate import evaluate_flow

        results = evaluate_flow(config_path=args.config, overrides=args.overrides, testsets=paths or None,
                                repeats=repeats, run_name=args.run_name, max_hops=max_hops, config=cfg)
    from ragrig.flows.render.evaluation import print_eval

    for r in results:
        print_eval(r)
    write_json(args.output_json, results[0] if len(results) == 1 else {"runs": results})
    return results


def cmd_eval(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.evaluate import load_testsets

    if args.repeats is not None and not 1 <= args.repeats <= REPEATS_MAX:
        raise InputError(f"-n/--repeats {args.repeats}: between 1 and {REPEATS_MAX} (as eval.repeats)")
    testsets = load_testsets(cfg, args.testset, drafts=args.include_drafts)  # all validated before any work
    if args.case:
        return eval_cases(cfg, args, testsets)
    if args.include_drafts:  # the flow reloads the test sets from their paths: hand it the loaded ones
        args.no_prefect = True
    evaluate(cfg, args, testsets, args.testset, repeats=args.repeats, max_hops=args.max_hops)
    return 0


def eval_cases(cfg: RagrigConfig, args: argparse.Namespace, testsets: list[TestSet]) -> int:
    """``ragrig eval --case ID``: only those cases, each printed with its hits (not logged)."""
    from ragrig.eval.evaluate import evaluate_testsets
    from ragrig.eval.testset import only_cases
    from ragrig.flows.render.cases import print_cases

    chosen = only_cases(testsets, args.case)
    reports = evaluate_testsets(cfg, chosen, repeats=args.repeats, max_hops=args.max_hops, log=None)
    results = [r.to_dict() for r in reports]
    for r in results:
        print_cases(r)
    write_json(args.output_json, results[0] if len(results) == 1 else {"runs": results})
    return 0


def cmd_run(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    """The main job: ingest, then evaluate every configured test set and log to MLflow."""
    from ragrig.eval.evaluate import load_testsets
    from ragrig.flows.cli.ingest import ingest
    from ragrig.flows.render.ingest import print_ingest

    testsets = load_testsets(cfg)  # a bad test set fails before the ingest
    stats = ingest(cfg, args)
    print_ingest(stats)
    evaluate(cfg, args, testsets, [])
    if cfg.mlflow.enabled:
        from ragrig.eval.tracking.store import tracking_uri

        uri = tracking_uri(cfg)
        print(f"MLflow store: {uri}\n  browse it: mlflow ui --backend-store-uri {uri} --host 127.0.0.1")
    return 0
