"""``ragrig sweep``: evaluate a grid of configs with shared indexes, embeddings and candidates."""

from __future__ import annotations

import argparse
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, add_runner, prefect_home, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("sweep", help="evaluate a grid of configs with shared indexes, embeddings and candidates")
    add_common(p)
    p.add_argument("sweep", metavar="FILE", help="a sweep file (configs/sweeps/*.yaml)")
    p.add_argument("--output-json", metavar="FILE")
    p.add_argument("--no-prefect", action="store_true", help="run without a Prefect flow")
    p.add_argument("--quiet", "-q", action="store_true")
    add_runner(p)
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.sweep.spec import load_sweep, resolve
    from ragrig.flows.render.sweep import print_sweep

    spec = load_sweep(args.sweep)
    configs = resolve(spec, args.overrides)  # every config validated before any work
    if args.no_prefect:
        from ragrig.eval.sweep.run import run_sweep
        from ragrig.flows.runners import cluster_executor

        with cluster_executor(configs[0][2]) as executor:  # flow.runner dask: each config a task on the cluster
            result = run_sweep(spec, args.overrides, progress=not args.quiet, configs=configs,
                               executor=executor).to_dict()
    else:
        prefect_home()
        from ragrig.flows.sweep import sweep_flow

        result = sweep_flow(sweep_path=args.sweep, overrides=args.overrides, progress=not args.quiet, configs=configs)
    print_sweep(result)
    write_json(args.output_json, result)
    return 0
