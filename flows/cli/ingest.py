"""``ragrig ingest``: the corpus into a new index version (incremental), as a Prefect flow or the plain pipeline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, add_runner, prefect_home, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("ingest", help="ingest the corpus into a new index version (incremental)")
    add_common(p)
    p.add_argument("--force", action="store_true", help="rebuild from scratch (caches still apply)")
    p.add_argument("--output-json", metavar="FILE", help="write the run summary as JSON")
    p.add_argument("--max-failures", type=int, default=None, metavar="N", help="exit 1 when more than N documents fail")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for another ingest's lock")
    p.add_argument("--no-prefect", action="store_true", help="run the plain pipeline without a Prefect flow")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    add_runner(p)
    p.set_defaults(func=cmd_ingest)


def ingest(cfg: RagrigConfig, args: argparse.Namespace, *, force: bool = False, progress: bool = True,
           wait_s: float = 0.0) -> dict[str, Any]:
    """One ingest of ``cfg`` (``args``: the command's --config, --set and --no-prefect); its stats as a dict."""
    from ragrig.retrieval.ingest.discover import corpus_kind

    corpus_kind(cfg.corpus)  # a missing corpus is one line at once, before Prefect, torch or docling is imported
    if args.no_prefect:  # the same runner, without Prefect: the partitions go to the cluster as plain Dask tasks
        from ragrig.flows.runners import cluster_executor
        from ragrig.retrieval.ingest.pipeline import IngestPipeline

        with cluster_executor(cfg) as executor:
            pipe = IngestPipeline(cfg, force=force, progress=progress)
            return pipe.run(executor, wait_s=wait_s).to_dict()
    prefect_home()
    from ragrig.flows.ingest import run_ingest

    return run_ingest(cfg, args.config, args.overrides, force=force, progress=progress, wait_s=wait_s)


def cmd_ingest(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.flows.render.ingest import print_ingest

    stats = ingest(cfg, args, force=args.force, progress=not args.quiet, wait_s=args.wait)
    write_json(args.output_json, stats)
    print_ingest(stats)
    if args.max_failures is not None and stats["docs_failed"] > args.max_failures:
        print(f"error: {stats['docs_failed']} documents failed (> --max-failures {args.max_failures})", file=sys.stderr)
        return 1
    return 0
