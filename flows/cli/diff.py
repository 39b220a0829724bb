"""``ragrig diff [--from V] [--to V]``: what one index version changed against another (documents and chunks
added, changed, moved, removed), which test cases touch those changes, and their paired metric deltas (both
versions evaluated; ``--no-eval``: the structural diff and the expected-section touches only)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("diff", help="two index versions: changed documents and chunks, the cases they touch, deltas")
    add_common(p)
    p.add_argument("--from", dest="from_version", default=None, metavar="VERSION",
                   help="the older version (default: the one published before --to)")
    p.add_argument("--to", dest="to_version", default=None, metavar="VERSION",
                   help="the newer version (default: the current one)")
    p.add_argument("--testset", "-t", action="append", default=[], help="test set YAML (default: eval.testsets)")
    p.add_argument("--no-eval", action="store_true", help="do not retrieve: no deltas, no top-10 touches")
    p.add_argument("--markdown", metavar="FILE")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.lifecycle.diff import to_markdown
    from ragrig.eval.lifecycle.published import compare_versions, open_version, previous_version
    from ragrig.flows.render.lifecycle import print_diff

    new = open_version(cfg, args.to_version)
    old_name = args.from_version or previous_version(new.layout, new.version)
    if old_name is None:
        raise InputError(f"no published version before {new.version} to diff against (pass --from)")
    old = open_version(cfg, old_name)
    if old.version >= new.version:
        raise InputError(f"--from {old.version} is not older than --to {new.version}")
    result = compare_versions(cfg, args.testset or None, new, old, evaluate=not args.no_eval, log=None)
    assert result.diff is not None
    print_diff(result.diff)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(to_markdown(result.diff) + "\n", encoding="utf-8")
    write_json(args.output_json, result.diff.to_dict())
    return 0
