"""``ragrig import-beir``: BEIR queries + qrels as a YAML test set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common


def register(sub: Any) -> None:
    p = sub.add_parser("import-beir", help="turn BEIR queries + qrels into a YAML test set")
    add_common(p)
    p.add_argument("folder")
    p.add_argument("--split", default="test")
    p.add_argument("--output", "-o", default=None)
    p.set_defaults(func=cmd_import_beir)


def cmd_import_beir(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.testset import dump_testset, import_beir

    ts = import_beir(args.folder, args.split)
    text = dump_testset(ts)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {len(ts.cases)} cases to {args.output}")
    else:
        sys.stdout.write(text)
    return 0
