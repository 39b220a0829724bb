"""``ragrig query``: the best chunks for one query from the published index (a table, JSON, or an LLM context),
asked of a running ``ragrig serve`` when one is configured (``$RAGRIG_SERVER_URL`` or ``serve.url``; ``--local``
opts out): the same output, without loading the model and the index for one query."""

from __future__ import annotations

import argparse
import json
import sys
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
    p.add_argument("--local", action="store_true",
                   help="query the index directly even when a server is configured ($RAGRIG_SERVER_URL, serve.url)")
    p.set_defaults(func=cmd_query, quick_exit=True)  # it writes nothing: no interpreter teardown (cli.main)


def cmd_query(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.serve.client import server_url

    url = None if args.local else server_url(cfg)
    if url is not None:
        return query_server(args, cfg, url)
    from ragrig.retrieval.context import build_context
    from ragrig.retrieval.filters import Filters
    from ragrig.retrieval.search.retriever import Retriever

    filters = Filters.parse(args.filter)
    retriever = Retriever(cfg)
    res = retriever.search(args.query, top_k=args.top_k, filters=filters, max_hops=args.max_hops)
    if args.context:
        return show(args, retriever.version.layout.key, context=build_context(
            res.hits, args.context_tokens, retriever.embedder.count_tokens).to_dict())
    return show(args, retriever.version.layout.key, result=res)


def query_server(args: argparse.Namespace, cfg: RagrigConfig, url: str) -> int:
    """``cmd_query`` through the server at ``url``: it answers only for this config's index and retrieval
    settings (409 otherwise), so the output is what the local path would print."""
    from ragrig.configs.models import settings_digest
    from ragrig.retrieval.serve.client import post

    payload = {"query": args.query, "top_k": args.top_k, "filters": args.filter, "max_hops": args.max_hops,
               "index": cfg.index_key(), "retrieval": settings_digest(cfg.retrieval)}
    if args.context:
        ctx, _ = post(cfg, url, "/context", {**payload, "tokens": args.context_tokens})
        ctx.pop("version", None)
        return show(args, cfg.index_key(), context=ctx)
    res, _ = post(cfg, url, "/retrieve", payload)
    return show(args, cfg.index_key(), result=res)


def show(args: argparse.Namespace, index_key: str, *, context: dict[str, Any] | None = None,
         result: Any = None) -> int:
    """The one output of ``query``, local or from a server: the context block (its text, or JSON), else the
    result (a ``RetrievalResult``, or a server's JSON of one) as JSON or the table."""
    if context is not None:
        if args.json:
            print(json.dumps(context, indent=2, ensure_ascii=False))
        else:  # the corpus's own text for a prompt: as written into a pipe, its control characters shown on a terminal
            from ragrig.flows.render.console import visible

            print(visible(context["text"]) if sys.stdout.isatty() else context["text"])
        return 0
    if args.json:
        print(json.dumps(result if isinstance(result, dict) else result.to_dict(), indent=2, ensure_ascii=False,
                         default=str))
        return 0
    from ragrig.flows.render.query import print_query
    from ragrig.retrieval.results import RetrievalResult

    print_query(RetrievalResult.from_dict(result) if isinstance(result, dict) else result, index_key,
                debug=args.debug)
    return 0
