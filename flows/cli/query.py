"""``ragrig query``: the best chunks for one query from the published index (a table, JSON, or an LLM context)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.flows.cli.common import add_common


def register(sub: Any) -> None:
    p = sub.add_parser("query", help="retrieve the best chunks for a query from the published index")
    add_common(p)
    p.add_argument("query")
    p.add_argument("--top-k", "-k", type=int, default=None)
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                   help="path=GLOB, format=md|html|docx|…, fm.FIELD=VALUE (repeatable)")
    p.add_argument("--debug", action="store_true", help="show the processed query, candidate counts and timings")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--context", action="store_true", help="print the numbered context block for an LLM")
    p.add_argument("--context-tokens", type=int, default=1500, help="token budget of --context")
    p.add_argument("--max-hops", type=int, default=None, metavar="N", help="multi-hop retrieval (0 disables)")
    p.set_defaults(func=cmd_query)


def cmd_query(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.context import build_context
    from ragrig.retrieval.filters import Filters
    from ragrig.retrieval.search.retriever import Retriever

    filters = Filters.parse(args.filter)
    retriever = Retriever(cfg)
    res = retriever.search(args.query, top_k=args.top_k, filters=filters, max_hops=args.max_hops)
    if args.context:
        ctx = build_context(res.hits, args.context_tokens, retriever.embedder.count_tokens)
        if args.json:
            print(json.dumps(ctx.to_dict(), indent=2, ensure_ascii=False))
        else:
            print(ctx.text)
        return 0
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, ensure_ascii=False, default=str))
        return 0
    from ragrig.flows.render.query import print_query

    print_query(res, retriever.version.layout.key, debug=args.debug)
    return 0
