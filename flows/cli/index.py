"""The index's housekeeping: ``ragrig health`` (versions and consistency), ``ragrig validate`` (a corpus before
ingesting it) and ``ragrig reset`` (remove an index and the cache entries only it uses)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config
from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common, write_json


def register(sub: Any) -> None:
    p = sub.add_parser("health", help="published versions, counts, model, and cross-store consistency checks")
    add_common(p)
    p.add_argument("-v", "--verbose", action="store_true", help="check every kept version, not only the current one")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_health)

    p = sub.add_parser("validate", help="check a corpus before ingesting it (writes nothing)")
    add_common(p)
    p.add_argument("folder", nargs="?", help="the corpus folder (default: corpus.path)")
    p.add_argument("--no-tokens", action="store_true", help="skip the model-window check (no tokenizer load)")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("reset", help="remove this config's index and the cache entries only it uses")
    add_common(p)
    p.add_argument("--yes", action="store_true", help="really remove (without it: show what would go, exit 2)")
    p.set_defaults(func=cmd_reset)


def cmd_health(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.index.health import check_index

    h = check_index(cfg, all_versions=args.verbose)
    write_json(args.output_json, h.to_dict())
    print(f"index {h.index_key} ({h.index_dir})")
    if h.current is None and not h.versions:
        print("  no published version: run `ragrig ingest`")
        return 1
    for v in h.versions:
        mark = "current" if v.current else "kept"
        state = "ok" if v.ok else "INCONSISTENT"
        print(f"  {v.version} ({mark}): {v.documents} documents, {v.chunks} chunks, model {v.model_id}: {state}")
        for p in v.problems:
            print(f"    - {p}")
    for name in h.leftovers:
        print(f"  leftover from an interrupted ingest (swept by the next one): {name}")
    if not h.ok and h.versions:
        print("  `ragrig ingest` rebuilds a damaged current version (unchanged documents come from the caches)")
    print("healthy" if h.ok else "UNHEALTHY")
    return 0 if h.ok else 1


def cmd_validate(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.embedding import Embedder
    from ragrig.retrieval.ingest.validate import ERROR, INFO, WARNING, validate_corpus

    if args.folder is not None and not args.folder.strip():
        raise InputError("validate: FOLDER is empty; name a corpus folder, or leave it out to validate corpus.path")
    if args.folder:  # another corpus: the config as loaded, with its path replaced (and checked like any path)
        cfg = load_config(args.config, [*args.overrides, f"corpus.path={Path(args.folder).resolve()}"])
    from ragrig.retrieval.ingest.discover import corpus_kind

    corpus_kind(cfg.corpus)  # a missing folder is one line at once, before the tokenizer (and torch) loads
    count = window = None
    if not args.no_tokens:
        emb = Embedder(cfg.embedding)
        count, window = emb.count_tokens, emb.window
    report = validate_corpus(cfg, count, window)
    write_json(args.output_json, report.to_dict())
    from ragrig.flows.render.console import say

    for f in report.findings:
        say(f"{f.level:7s} {f.doc_id}: {f.message}")
    if report.files == 0:  # as ingest says it: an empty (or unmounted) corpus is nothing to index
        raise InputError(f"corpus.path: no documents in {cfg.corpus.path} (corpus.include: "
                         f"{', '.join(cfg.corpus.include)}): nothing to index")
    print(f"{report.files} files: {report.count(ERROR)} errors, {report.count(WARNING)} warnings, "
          f"{report.count(INFO)} notes")
    return 0 if report.ok else 1


def cmd_reset(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.index.reset import plan_reset, reset

    plan, chunk_shas, doc_shas = plan_reset(cfg)
    if not plan.exists:
        print(f"nothing to reset: no index at {plan.index_dir}")
        return 0
    what = (f"index {plan.index_dir} ({len(plan.versions)} versions, "
            f"collections {', '.join(plan.collections) or '-'}), cache entries used by no other index: "
            f"up to {len(chunk_shas)} embeddings, {len(doc_shas)} extractions")
    if not args.yes:
        print(f"would remove {what}\nrun again with --yes to remove it")
        return 2
    done = reset(cfg)
    print(f"removed {done.index_dir}: {len(done.versions)} versions, {done.embedding_rows} cached embeddings, "
          f"{done.extract_rows} cached extractions, {done.matrices} cached view matrices")
    return 0
