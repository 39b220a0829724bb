"""``ragrig compare`` (runs side by side, query by query) and ``ragrig gate`` (PASS / WARN / BLOCK against a
baseline, exit 1 on BLOCK). The statistics and verdicts live in ``eval.compare`` and ``eval.gate``."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.eval.metrics import COMPARED, GATED
from ragrig.flows.cli.common import add_common, write_json, write_text

if TYPE_CHECKING:
    from ragrig.eval.testset import TestSet


def register(sub: Any) -> None:
    p = sub.add_parser("compare", help="per-query deltas, paired significance tests and flipped queries")
    add_common(p)
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="eval JSON files, MLflow run ids or run names; the first is the baseline")
    p.add_argument("--metric", action="append", default=[],
                   help=f"metric to compare (repeatable; default {', '.join(COMPARED)})")
    p.add_argument("-k", type=int, default=10, help="top-k for flipped queries (default 10)")
    p.add_argument("--permutations", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", metavar="FILE", help="also write the comparison as Markdown")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("gate", help="PASS / WARN / BLOCK: the current config (or a run) against a baseline")
    add_common(p)
    p.add_argument("--baseline", required=True, metavar="FILE|RUN", help="baseline JSON file (or an MLflow run)")
    p.add_argument("--policy", metavar="FILE",
                   help=f"gate policy YAML (default: {', '.join(GATED)}; max drop 0.02; alpha 0.05)")
    p.add_argument("--testset", "-t", action="append", default=[],
                   help="test set(s) to evaluate (default: eval.testsets)")
    p.add_argument("--candidate", metavar="FILE|RUN",
                   help="judge this eval report / MLflow run instead of evaluating now")
    p.add_argument("--update-baseline", action="store_true", help="write the evaluation as the new baseline file")
    p.add_argument("--no-ingest", action="store_true", help="evaluate the published index as it is")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (e.g. for a CI step summary)")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_gate)


def _write_text(path: str | None, text: str) -> None:
    write_text(path, text + "\n")  # temp + fsync + rename: a full disk never leaves a baseline cut short


def cmd_compare(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.compare import compare, load_run, to_markdown
    from ragrig.eval.tracking.store import tracking_uri
    from ragrig.flows.render.compare import print_comparison

    if len(args.runs) < 2:
        raise InputError("compare needs at least two runs: BASELINE CANDIDATE [CANDIDATE …]")
    check_compare_options(args)
    uri = tracking_uri(cfg)
    base_name, base = load_run(args.runs[0], uri)
    metrics = tuple(args.metric) if args.metric else COMPARED
    results = []
    md = []
    for ref in args.runs[1:]:
        name, cand = load_run(ref, uri)
        c = compare(base, cand, metrics, k=args.k, n_perm=args.permutations, seed=args.seed,
                    base_name=base_name, cand_name=name)
        results.append(c.to_dict())
        md.append(to_markdown(c))
        print_comparison(c)
    _write_text(args.markdown, "\n\n".join(md))
    write_json(args.output_json, results[0] if len(results) == 1 else {"comparisons": results})
    return 0


PERMUTATIONS = (100, 100_000)  # the sign-flip test's resamples: fewer say nothing, more only cost memory


def check_compare_options(args: argparse.Namespace) -> None:
    """The numbers and runs ``compare`` is given, refused in one line naming the option before any run is read."""
    from pathlib import Path

    lo, hi = PERMUTATIONS
    if not lo <= args.permutations <= hi:
        raise InputError(f"compare: --permutations {args.permutations}: between {lo} and {hi}")
    if args.seed < 0:
        raise InputError(f"compare: --seed {args.seed}: a whole number, 0 or more")
    if args.k < 1:
        raise InputError(f"compare: -k {args.k}: the top k of the flipped queries is 1 or more")
    seen: set[str] = set()
    for ref in args.runs:
        key = str(Path(ref).resolve()) if Path(ref).is_file() else ref
        if key in seen:
            raise InputError(f"compare: {ref} is given twice (a run compared with itself shows nothing)")
        seen.add(key)


def _candidates(args: argparse.Namespace, cfg: RagrigConfig, testsets: list[TestSet] | None) -> list[dict[str, Any]]:
    """The reports to judge: a given run, or an evaluation of the current config now (not logged)."""
    if args.candidate or testsets is None:
        from ragrig.eval.compare import load_run
        from ragrig.eval.tracking.store import tracking_uri

        return [load_run(args.candidate, tracking_uri(cfg))[1]]
    from ragrig.eval.evaluate import evaluate_testsets

    if not args.no_ingest:
        from ragrig.retrieval.ingest.pipeline import IngestPipeline

        IngestPipeline(cfg, progress=False).run()
    return [r.to_dict() for r in evaluate_testsets(cfg, testsets, log=None)]


def cmd_gate(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.evaluate import load_testsets
    from ragrig.eval.gate import (
        BLOCK,
        baseline_payload,
        judge_all,
        load_baselines,
        load_policy,
        overall,
        to_junit,
        to_markdown,
    )
    from ragrig.flows.render.gate import print_gate

    policy = load_policy(args.policy)
    testsets = None if args.candidate else load_testsets(cfg, args.testset)  # bad test sets fail before any work
    # so does a missing or bad baseline (with --update-baseline it is the file to write)
    baselines = None if args.update_baseline else load_baselines(args.baseline, cfg)
    reports = _candidates(args, cfg, testsets)
    if baselines is None:
        _write_text(args.baseline, json.dumps(baseline_payload(reports), indent=1, ensure_ascii=False))
        print(f"wrote baseline {args.baseline} ({', '.join(r['testset'] for r in reports)}): review and commit it")
        return 0
    results = judge_all(baselines, reports, policy)
    print_gate(results)
    _write_text(args.markdown, to_markdown(results))
    _write_text(args.junit, to_junit(results))
    write_json(args.output_json, {"verdict": overall(results), "results": [r.to_dict() for r in results]})
    return 1 if overall(results) == BLOCK else 0
