"""``ragrig import-beir`` (BEIR queries + qrels as a YAML test set), ``ragrig testset check`` (is each case's
evidence still where the test set says, with the same text? exit 1 when a case's evidence is gone) and
``ragrig testset draft`` (draft cases from the corpus's own structure)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("import-beir", help="turn BEIR queries + qrels into a YAML test set")
    add_common(p)
    p.add_argument("folder")
    p.add_argument("--split", default="test")
    p.add_argument("--output", "-o", default=None)
    p.set_defaults(func=cmd_import_beir)

    ts = sub.add_parser("testset", help="keep test sets in step with the corpus: check, draft")
    tsub = ts.add_subparsers(dest="testset_command", required=True)
    p = tsub.add_parser("check", help="ok / moved / changed / gone per case, against an index version")
    add_common(p)
    p.add_argument("--testset", "-t", action="append", default=[], help="test set YAML (default: eval.testsets)")
    p.add_argument("--version", default=None, help="the index version to check (default: the current one)")
    p.add_argument("--against", default=None, metavar="VERSION|none",
                   help="the reference version (default: the one published before --version)")
    p.add_argument("--write", action="store_true",
                   help="update the YAML in place: re-anchor moved cases, write fingerprints (comments kept)")
    p.add_argument("--accept", action="append", default=[], metavar="CASE",
                   help="with --write: accept this changed case's edit (write its new fingerprint); repeatable")
    p.add_argument("--markdown", metavar="FILE")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_check)

    p = tsub.add_parser("draft", help="draft cases from the corpus's structure (offline, deterministic)")
    add_common(p)
    p.add_argument("--output", "-o", required=True, help="the YAML test set of drafts to write")
    p.add_argument("--version", default=None, help="the index version to draft from (default: the current one)")
    p.add_argument("--per-kind", type=int, default=25, metavar="N",
                   help="at most N drafts of each kind, spread over the corpus (default 25)")
    p.add_argument("--kind", action="append", default=[],
                   help="exact-term, header, comparison, multi-hop (repeatable; default all)")
    p.add_argument("--name", default=None, help="the test set's name (default: <index name>-drafts)")
    p.add_argument("--llm", action="store_true",
                   help="rewrite each draft's query in user phrasing through the LLM judge's endpoint "
                        "(retrieval.judge.base_url/model; key from retrieval.judge.api_key_env)")
    p.add_argument("--output-json", metavar="FILE", help="write the summary (kinds, how many resolve) as JSON")
    p.add_argument("--force", action="store_true", help="replace --output when it exists (drafts never overwrite "
                   "a test set silently)")
    p.set_defaults(func=cmd_draft)


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


def cmd_check(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.evaluate import load_testsets
    from ragrig.eval.lifecycle.check import to_markdown
    from ragrig.eval.lifecycle.published import check_all, open_version, previous_version
    from ragrig.eval.lifecycle.yaml_write import write_check
    from ragrig.flows.render.lifecycle import print_check, print_write

    if args.accept and not args.write:
        raise InputError("--accept needs --write (it updates the fingerprints in the file)")
    sets = load_testsets(cfg, args.testset, drafts=True)
    known = {c.id for ts in sets for c in ts.cases}
    unknown = [a for a in args.accept if a not in known]
    if unknown:
        raise InputError(f"--accept {unknown[0]!r}: no case of that id in the test set(s); nothing was written")
    if args.write:
        not_yaml = [ts.path for ts in sets if not ts.path or Path(ts.path).is_dir()]
        if not_yaml:
            raise InputError(f"--write updates YAML test sets; {not_yaml[0]} is not one")
    new = open_version(cfg, args.version)
    ref_name = previous_version(new.layout, new.version) if args.against is None else args.against
    old = None if ref_name in (None, "none") else open_version(cfg, ref_name)
    reports = check_all(sets, new, old)
    for r in reports:
        print_check(r)
    if args.write:
        for ts, r in zip(sets, reports, strict=True):
            assert ts.path is not None
            print_write(write_check(ts.path, r, accept=[a for a in args.accept if a in {c.id for c in r.cases}]))
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(to_markdown([r.to_dict() for r in reports]) + "\n", encoding="utf-8")
    write_json(args.output_json, {"checks": [r.to_dict() for r in reports]})
    gone = [f"{r.testset}: {cid}" for r in reports for cid in r.gone]
    if gone:
        print(f"error: {len(gone)} case(s) lost their evidence: {', '.join(gone)}", file=sys.stderr)
        return 1
    return 0


MAX_PER_KIND = 10_000


def cmd_draft(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.lifecycle.drafts import KINDS, draft_testset, write_drafts
    from ragrig.eval.lifecycle.published import open_version
    from ragrig.flows.render.lifecycle import print_drafts

    kinds = args.kind or list(KINDS)
    bad = sorted(set(kinds) - set(KINDS))
    if bad:
        raise InputError(f"--kind {bad[0]!r}: not a draft kind (have: {', '.join(KINDS)})")
    if not 1 <= args.per_kind <= MAX_PER_KIND:
        raise InputError(f"--per-kind {args.per_kind}: between 1 and {MAX_PER_KIND} drafts of each kind")
    if Path(args.output).exists() and not args.force:
        raise InputError(f"--output {args.output} exists (a test set you may have written); choose another file, "
                         "or pass --force to replace it")
    version = open_version(cfg, args.version)
    ts = draft_testset(version, kinds=kinds, per_kind=args.per_kind, name=args.name)
    if args.llm:
        from ragrig.eval.lifecycle.rephrase import rephrase_drafts

        ts = rephrase_drafts(ts, cfg.retrieval.judge)
    summary = write_drafts(ts, version, args.output)
    print_drafts(summary)
    write_json(args.output_json, summary)
    return 0
