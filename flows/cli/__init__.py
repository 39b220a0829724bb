"""The ``ragrig`` command line. Exit codes: 0 ok, 1 run/gate failed, 2 bad input, 3 locked.

One module per command group (``ingest``, ``query``, ``evaluate``: eval and run, ``compare``: compare and
gate, ``sweep``, ``index``: health, validate and reset, ``testsets``: import-beir and testset check/draft,
``diff``: two index versions); each registers its
subcommands. Every command takes ``--config FILE`` and ``--set key.path=value``; ``main`` loads the config
once and hands it to the command. Heavy imports (Prefect, torch, Chroma) happen after the config is
validated, so bad input fails fast.
"""

from __future__ import annotations

import argparse
import sys

from ragrig.configs.errors import RagrigError
from ragrig.configs.load import load_config
from ragrig.flows.cli import compare, diff, evaluate, index, ingest, query, sweep, testsets
from ragrig.flows.cli.common import quiet_env

GROUPS = (ingest, query, evaluate, compare, sweep, index, testsets, diff)  # the order of `ragrig --help`


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragrig", description="Ingest, retrieve and evaluate RAG retrieval.")
    parser.add_argument("--log-json", action="store_true", help="structured logs: one JSON object per line on stderr")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="INFO: per-stage timings and counts; DEBUG: also per-query candidates and timings")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from ragrig.flows.logs import configure

    configure(json_logs=args.log_json, level=args.log_level)
    try:
        cfg = load_config(args.config, args.overrides)
        from ragrig.retrieval.search.query import load_synonyms

        load_synonyms(cfg.retrieval.synonyms)  # a bad synonyms file fails every command up front
        quiet_env(cfg)
        return int(args.func(args, cfg))
    except RagrigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


__all__ = ["build_parser", "main"]
