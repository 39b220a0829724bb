"""The ``ragrig`` command line. Exit codes: 0 ok, 1 run/gate failed, 2 bad input, 3 locked.

Every command takes ``--config FILE`` and ``--set key.path=value``. Heavy imports
(Prefect, torch, Chroma) happen after the config is validated, so bad input fails fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from configs.errors import RagrigError
from configs.schema import RagrigConfig, load_config


def _quiet_env(cfg: RagrigConfig) -> None:
    """Offline, quiet defaults for the libraries we drive (never overriding what the user set)."""
    home = cfg.home_dir
    defaults = {
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_TO_API_BATCH_INTERVAL": "0.3",
        "TRANSFORMERS_VERBOSITY": "error",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "ANONYMIZED_TELEMETRY": "False",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "RAGAS_DO_NOT_TRACK": "true",
        "DO_NOT_TRACK": "1",
    }
    from retrieval.embedding import PACKAGED_MINILM

    if cfg.embedding.model in PACKAGED_MINILM or Path(os.path.expanduser(cfg.embedding.model)).exists():
        defaults["HF_HUB_OFFLINE"] = "1"  # a local model never needs the hub
    for k, v in defaults.items():
        os.environ.setdefault(k, v)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)


def _write_json(path: str | None, obj: Any) -> None:
    if path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="a YAML config layered over the embedded defaults")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override one config value (repeatable), e.g. --set retrieval.fusion.rrf_k=40")


def cmd_ingest(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from flows.report import print_ingest

    if args.no_prefect:
        from retrieval.ingest.pipeline import IngestPipeline

        stats = IngestPipeline(cfg, force=args.force, progress=not args.quiet).run().to_dict()
    else:
        from flows.ingest import run_ingest

        stats = run_ingest(args.config, args.overrides, force=args.force, progress=not args.quiet, wait_s=args.wait)
    _write_json(args.output_json, stats)
    print_ingest(stats)
    if args.max_failures is not None and stats["docs_failed"] > args.max_failures:
        print(f"error: {stats['docs_failed']} documents failed (> --max-failures {args.max_failures})", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragrig", description="Ingest, retrieve and evaluate RAG retrieval.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="ingest the corpus into a new index version (incremental)")
    _common(p)
    p.add_argument("--force", action="store_true", help="rebuild from scratch (caches still apply)")
    p.add_argument("--output-json", metavar="FILE", help="write the run summary as JSON")
    p.add_argument("--max-failures", type=int, default=None, metavar="N", help="exit 1 when more than N documents fail")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS", help="wait this long for another ingest's lock")
    p.add_argument("--no-prefect", action="store_true", help="run the plain pipeline without a Prefect flow")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_ingest)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config, args.overrides)
        _quiet_env(cfg)
        return int(args.func(args, cfg))
    except RagrigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
