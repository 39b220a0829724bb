"""``ragrig adapt``: fine-tune the configured torch encoder on the published index (pairs from its structure),
write an ordinary sentence-transformers folder, then compare it with the base on the config's test sets."""

from __future__ import annotations

import argparse
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, add_runner, prefect_home, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("adapt", help="fine-tune the encoder on the published index (self-supervised; docs/adapt.md)")
    add_common(p)
    p.add_argument("--output", "-o", dest="output_dir", metavar="DIR", default=None,
                   help="the model folder (default: <home>/models/<index>-<version>-<recipe hash>/, reused when "
                   "it already holds this training)")
    p.add_argument("--force", action="store_true", help="train again even when the folder holds this training "
                   "(an existing --output folder that adapt wrote is replaced whole)")
    p.add_argument("--no-compare", action="store_true", help="skip the comparison with the base model")
    p.add_argument("--output-json", metavar="FILE", help="write the result (model, pairs, steps, seconds, ...)")
    p.add_argument("--no-prefect", action="store_true", help="run the plain sequence without a Prefect flow")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    add_runner(p)
    p.set_defaults(func=cmd_adapt)


def cmd_adapt(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.flows.render.adapt import print_adapt
    from ragrig.retrieval.adapt.run import preflight

    preflight(cfg)  # a non-torch encoder, no published index: one line before anything loads
    if args.output_dir:  # a file, a folder adapt did not write, nowhere writable: one line before any work
        from pathlib import Path

        from ragrig.retrieval.adapt.output import check_output

        check_output(Path(args.output_dir).expanduser().resolve(), args.force)
    progress, compare = not args.quiet, not args.no_compare
    if args.no_prefect:
        from ragrig.eval.adapt import run_adapt

        result = run_adapt(cfg, args.output_dir, force=args.force, progress=progress, compare=compare)
    else:
        prefect_home()
        from ragrig.flows.adapt import run_adapt_flow

        result = run_adapt_flow(cfg, args.config, args.overrides, args.output_dir, force=args.force, progress=progress,
                                compare=compare)
    write_json(args.output_json, result)
    print_adapt(result)
    return 0
