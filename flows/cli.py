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

from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.load import load_config
from ragrig.configs.models import RagrigConfig


def _quiet_env(cfg: RagrigConfig) -> None:
    """Offline, quiet defaults for the libraries we drive (never overriding what the user set)."""
    from ragrig.flows.environment import QUIET_ENV

    defaults = {**QUIET_ENV, "PREFECT_HOME": str(cfg.home_dir / "prefect")}
    from ragrig.retrieval.embedding import PACKAGED_MINILM

    if cfg.embedding.model in PACKAGED_MINILM or Path(os.path.expanduser(cfg.embedding.model)).exists():
        defaults["HF_HUB_OFFLINE"] = "1"  # a local model never needs the hub
    for k, v in defaults.items():
        os.environ.setdefault(k, v)
    import logging

    for name in ("mlflow", "alembic", "httpx", "bm25s", "docling", "chromadb", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _prefect_home() -> None:
    """Prefect's ephemeral API needs its home to exist; created only when a flow is about to run, so a
    command that fails validation writes nothing."""
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
    from ragrig.flows.report import print_ingest

    if args.no_prefect:
        from ragrig.retrieval.ingest.pipeline import IngestPipeline

        stats = IngestPipeline(cfg, force=args.force, progress=not args.quiet).run(wait_s=args.wait).to_dict()
    else:
        from ragrig.flows.ingest import run_ingest

        _prefect_home()
        stats = run_ingest(args.config, args.overrides, force=args.force, progress=not args.quiet, wait_s=args.wait)
    _write_json(args.output_json, stats)
    print_ingest(stats)
    if args.max_failures is not None and stats["docs_failed"] > args.max_failures:
        print(f"error: {stats['docs_failed']} documents failed (> --max-failures {args.max_failures})", file=sys.stderr)
        return 1
    return 0


def _retriever(cfg: RagrigConfig):  # type: ignore[no-untyped-def]
    from ragrig.retrieval.search.retriever import Retriever

    return Retriever(cfg)


def cmd_query(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.flows.report import console
    from ragrig.retrieval.context import build_context
    from ragrig.retrieval.search.filters import Filters
    from rich.table import Table

    filters = Filters.parse(args.filter)
    retriever = _retriever(cfg)
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
    table = Table(title=f"{res.query!r} @ {retriever.version.layout.key}@{res.version}", title_justify="left")
    for col, just in (("#", "right"), ("header path", "left"), ("doc", "left"), ("score", "right"),
                      ("bm25", "right"), ("vector", "right"), ("header", "right")):
        table.add_column(col, justify=just, overflow="fold")
    for i, h in enumerate(res.hits, 1):
        ranks = ["-" if h.rank_in(s) is None else str(h.rank_in(s)) for s in ("bm25", "vector", "header")]
        table.add_row(str(i), h.header + (f"  [dim]({h.reason})[/dim]" if h.reason else ""), h.doc_id,
                      f"{h.score:.3f}", *ranks)
    console.print(table)
    if args.debug:
        print(f"normalised query: {res.normalized}")
        print(f"bm25 query:       {res.bm25_query}" + (f"  (expanded: {', '.join(res.expansions)})" if res.expansions else ""))
        if res.comparison:
            print(f"comparison of:    {' | '.join(res.comparison)}")
        print("candidates:       " + ", ".join(f"{k}={v}" for k, v in res.candidates.items()))
        for hop in res.hops:
            state = "can answer" if hop["can_answer"] else "missing: " + ", ".join(m["item"] for m in hop["missing"])
            print(f"hop {hop['hop']}:            {state} — {hop['reasoning']}")
            for a in hop["added"]:
                print(f"                  + {a['chunk_id']} for '{a['item']}' (via {a['via']})")
        print("timings (ms):     " + ", ".join(f"{k}={v:.1f}" for k, v in res.timings_ms.items()))
    return 0


def cmd_eval(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.testset import load_testset
    from ragrig.flows.report import print_eval

    paths = args.testset or cfg.eval.testsets
    if not paths:
        raise InputError("no test set: pass --testset FILE or set eval.testsets")
    testsets = [load_testset(p) for p in paths]  # every test set validated before any work
    if args.no_prefect:
        from ragrig.eval.evaluate import evaluate
        from ragrig.eval.mlflow_log import log_report
        from ragrig.eval.relevance import resolve_testset

        retriever = _retriever(cfg)
        # every expectation resolved against the index before anything is logged
        resolved = [resolve_testset(ts, retriever.version.documents_by_id) for ts in testsets]
        results = []
        for ts, targets in zip(testsets, resolved):
            report = evaluate(cfg, ts, retriever, repeats=args.repeats, max_hops=args.max_hops, targets=targets)
            d = report.to_dict()
            if cfg.mlflow.enabled:
                d["mlflow_run_id"] = log_report(cfg, report, run_name=args.run_name)
            results.append(d)
    else:
        from ragrig.flows.evaluate import evaluate_flow

        _prefect_home()
        results = evaluate_flow(config_path=args.config, overrides=args.overrides, testsets=args.testset or None,
                                repeats=args.repeats, run_name=args.run_name, max_hops=args.max_hops)
    for r in results:
        print_eval(r)
    _write_json(args.output_json, results[0] if len(results) == 1 else {"runs": results})
    return 0


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


def cmd_run(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    """The main job: ingest, then evaluate every configured test set and log to MLflow."""
    common = {"config": args.config, "overrides": args.overrides, "no_prefect": args.no_prefect}
    ingest = argparse.Namespace(**common, force=False, output_json=None, max_failures=None, wait=0.0, quiet=False)
    rc = cmd_ingest(ingest, cfg)
    if rc != 0:
        return rc
    evaluation = argparse.Namespace(**common, testset=[], repeats=None, run_name=args.run_name,
                                    output_json=args.output_json, max_hops=None)
    rc = cmd_eval(evaluation, cfg)
    if cfg.mlflow.enabled:
        from ragrig.eval.mlflow_log import tracking_uri

        uri = tracking_uri(cfg)
        print(f"MLflow store: {uri}\n  browse it: mlflow ui --backend-store-uri {uri} --host 127.0.0.1")
    return rc


def cmd_compare(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.compare import DEFAULT_METRICS, compare, load_run, print_comparison, to_markdown
    from ragrig.eval.mlflow_log import tracking_uri

    if len(args.runs) < 2:
        raise InputError("compare needs at least two runs: BASELINE CANDIDATE [CANDIDATE …]")
    uri = tracking_uri(cfg)
    base_name, base = load_run(args.runs[0], uri)
    metrics = tuple(args.metric) if args.metric else DEFAULT_METRICS
    results = []
    md = []
    for ref in args.runs[1:]:
        name, cand = load_run(ref, uri)
        c = compare(base, cand, metrics, k=args.k, n_perm=args.permutations, seed=args.seed,
                    base_name=base_name, cand_name=name)
        results.append(c.to_dict())
        md.append(to_markdown(c))
        print_comparison(c)
    if args.markdown:
        Path(args.markdown).write_text("\n\n".join(md) + "\n", encoding="utf-8")
    _write_json(args.output_json, results[0] if len(results) == 1 else {"comparisons": results})
    return 0


def cmd_gate(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.compare import load_run
    from ragrig.eval.gate import (
        BLOCK,
        baseline_payload,
        judge,
        load_baseline,
        load_policy,
        overall,
        print_gate,
        to_junit,
        to_markdown,
    )
    from ragrig.eval.mlflow_log import tracking_uri

    policy = load_policy(args.policy)
    # the candidate: a given run, or an evaluation of the current config now
    if args.candidate:
        reports = [load_run(args.candidate, tracking_uri(cfg))[1]]
    else:
        from ragrig.eval.evaluate import evaluate
        from ragrig.eval.testset import load_testset

        paths = args.testset or cfg.eval.testsets
        if not paths:
            raise InputError("no test set: pass --testset FILE or set eval.testsets")
        testsets = [load_testset(p) for p in paths]  # bad test sets fail before any work
        if not args.no_ingest:
            from ragrig.retrieval.ingest.pipeline import IngestPipeline

            IngestPipeline(cfg, progress=False).run()
        retriever = _retriever(cfg)
        reports = [evaluate(cfg, ts, retriever).to_dict() for ts in testsets]
    if args.update_baseline:
        Path(args.baseline).parent.mkdir(parents=True, exist_ok=True)
        Path(args.baseline).write_text(json.dumps(baseline_payload(reports), indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
        print(f"wrote baseline {args.baseline} ({', '.join(r['testset'] for r in reports)}): review and commit it")
        return 0
    if Path(args.baseline).exists() or args.baseline.endswith(".json"):
        baselines = load_baseline(args.baseline)
    else:
        b = load_run(args.baseline, tracking_uri(cfg))[1]
        baselines = {b["testset"]: b}
    results = []
    for rep in reports:
        base = baselines.get(rep["testset"])
        if base is None and len(baselines) == 1 and len(reports) == 1:
            base = next(iter(baselines.values()))
        if base is None:
            raise InputError(f"the baseline has no run for test set '{rep['testset']}' (it has: {sorted(baselines)})")
        results.append(judge(base, rep, policy))
    print_gate(results)
    md = to_markdown(results)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(md + "\n", encoding="utf-8")
    if args.junit:
        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        Path(args.junit).write_text(to_junit(results) + "\n", encoding="utf-8")
    _write_json(args.output_json, {"verdict": overall(results), "results": [r.to_dict() for r in results]})
    return 1 if overall(results) == BLOCK else 0


def cmd_sweep(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.eval.sweep import load_sweep, resolve, run_sweep

    spec = load_sweep(args.sweep)
    resolve(spec, args.overrides)  # every config validated before any work
    if args.no_prefect:
        result = run_sweep(spec, args.overrides, progress=not args.quiet).to_dict()
    else:
        from ragrig.flows.sweep import sweep_flow

        _prefect_home()
        result = sweep_flow(sweep_path=args.sweep, overrides=args.overrides, progress=not args.quiet)
    print_sweep(result)
    _write_json(args.output_json, result)
    return 0


def print_sweep(result: dict[str, Any]) -> None:
    from ragrig.flows.report import console, short
    from rich.table import Table

    params: list[str] = []
    for r in result["rows"]:
        params += [k for k in r["overrides"] if k not in params]
    metrics = ("ndcg@10", "recall@10", "mrr@10", "recall@100")
    t = Table(title=f"sweep {result['name']}: {len(result['rows'])} evaluations in {result['seconds']['total']:.1f} s",
              title_justify="left")
    for p in params:
        t.add_column(p.split(".")[-1], no_wrap=True)
    t.add_column("test set", no_wrap=True)
    for m in metrics:
        t.add_column(short(m), justify="right", no_wrap=True)
    best = result.get("best") or {}
    for r in result["rows"]:
        star = r["label"] == best.get("label") and r["testset"] == best.get("testset")
        vals = [str(r["overrides"].get(p, "")) for p in params]
        ms = [f"{r['metrics'].get(m, float('nan')):.4f}" for m in metrics]
        t.add_row(*vals, r["testset"], *[f"[bold green]{m}[/bold green]" if star else m for m in ms])
    console.print(t)
    for ix in result.get("indexes", []):
        print(f"index {ix['index_key']}: {ix['chunks']} chunks, {ix['embedded']} embedded, {ix['cached']} from cache, "
              f"{ix['distinct_texts']} distinct chunk texts so far")
    if best:
        print(f"best by {result['metric']}: {best['label']} ({best['metrics'].get(result['metric'], 0):.4f})")
        print("  overrides: " + " ".join(f"--set {k}={v}" for k, v in best["overrides"].items()))
    if result.get("parent_run_id"):
        print(f"mlflow parent run: {result['parent_run_id']}")


def cmd_health(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.index.health import check_index

    h = check_index(cfg, all_versions=args.verbose)
    _write_json(args.output_json, h.to_dict())
    print(f"index {h.index_key} ({h.index_dir})")
    if h.current is None:
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
    print("healthy" if h.ok else "UNHEALTHY")
    return 0 if h.ok else 1


def cmd_validate(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.embedding import Embedder
    from ragrig.retrieval.ingest.validate import ERROR, INFO, WARNING, validate_corpus

    if args.folder:
        cfg = load_config(args.config, [*args.overrides, f"corpus.path={Path(args.folder).resolve()}"])
    count = window = None
    if not args.no_tokens:
        emb = Embedder(cfg.embedding)
        count, window = emb.count_tokens, emb.window
    report = validate_corpus(cfg, count, window)
    _write_json(args.output_json, report.to_dict())
    for f in report.findings:
        print(f"{f.level:7s} {f.doc_id}: {f.message}")
    print(f"{report.files} files: {report.count(ERROR)} errors, {report.count(WARNING)} warnings, "
          f"{report.count(INFO)} notes")
    return 0 if report.ok else 1


def cmd_reset(args: argparse.Namespace, cfg: RagrigConfig) -> int:
    from ragrig.retrieval.index.reset import plan_reset, reset

    plan, chunk_shas, doc_shas = plan_reset(cfg)
    if not plan.exists:
        print(f"nothing to reset: no index at {plan.index_dir}")
        return 0
    what = (f"index {plan.index_dir} ({len(plan.versions)} versions, collections {', '.join(plan.collections) or '-'}), "
            f"cache entries used by no other index: up to {len(chunk_shas)} embeddings, {len(doc_shas)} extractions")
    if not args.yes:
        print(f"would remove {what}\nrun again with --yes to remove it")
        return 2
    done = reset(cfg)
    print(f"removed {done.index_dir}: {len(done.versions)} versions, {done.embedding_rows} cached embeddings, "
          f"{done.extract_rows} cached extractions")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragrig", description="Ingest, retrieve and evaluate RAG retrieval.")
    parser.add_argument("--log-json", action="store_true", help="structured logs: one JSON object per line on stderr")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="INFO: per-stage timings and counts; DEBUG: also per-query candidates and timings")
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

    p = sub.add_parser("query", help="retrieve the best chunks for a query from the published index")
    _common(p)
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

    p = sub.add_parser("eval", help="evaluate retrieval on YAML test sets and log to MLflow")
    _common(p)
    p.add_argument("--testset", "-t", action="append", default=[], help="test set YAML (default: eval.testsets)")
    p.add_argument("-n", "--repeats", type=int, default=None, help="run N times: latency percentiles and variance")
    p.add_argument("--max-hops", type=int, default=None, metavar="N",
                   help="force multi-hop depth N for every case (default: per case, else retrieval.max_hops)")
    p.add_argument("--output-json", metavar="FILE")
    p.add_argument("--run-name", default=None)
    p.add_argument("--no-prefect", action="store_true", help="run without a Prefect flow")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("run", help="the main job: ingest the corpus, evaluate its test sets, log to MLflow")
    _common(p)
    p.add_argument("--run-name", default=None)
    p.add_argument("--output-json", metavar="FILE", help="write the evaluation report as JSON")
    p.add_argument("--no-prefect", action="store_true", help="run without Prefect flows")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compare", help="per-query deltas, paired significance tests and flipped queries")
    _common(p)
    p.add_argument("runs", nargs="+", metavar="RUN", help="eval JSON files, MLflow run ids or run names; the first is the baseline")
    p.add_argument("--metric", action="append", default=[], help="metric to compare (repeatable; default ndcg@10, recall@10, mrr@10, precision@5)")
    p.add_argument("-k", type=int, default=10, help="top-k for flipped queries (default 10)")
    p.add_argument("--permutations", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", metavar="FILE", help="also write the comparison as Markdown")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("gate", help="PASS / WARN / BLOCK: the current config (or a run) against a baseline")
    _common(p)
    p.add_argument("--baseline", required=True, metavar="FILE|RUN", help="baseline JSON file (or an MLflow run)")
    p.add_argument("--policy", metavar="FILE", help="gate policy YAML (default: ndcg@10, recall@10, mrr@10; max drop 0.02; alpha 0.05)")
    p.add_argument("--testset", "-t", action="append", default=[], help="test set(s) to evaluate (default: eval.testsets)")
    p.add_argument("--candidate", metavar="FILE|RUN", help="judge this eval report / MLflow run instead of evaluating now")
    p.add_argument("--update-baseline", action="store_true", help="write the evaluation as the new baseline file")
    p.add_argument("--no-ingest", action="store_true", help="evaluate the published index as it is")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (e.g. for a CI step summary)")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("sweep", help="evaluate a grid of configs with shared indexes, embeddings and candidates")
    _common(p)
    p.add_argument("sweep", metavar="FILE", help="a sweep file (configs/sweeps/*.yaml)")
    p.add_argument("--output-json", metavar="FILE")
    p.add_argument("--no-prefect", action="store_true", help="run without a Prefect flow")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("health", help="published versions, counts, model, and cross-store consistency checks")
    _common(p)
    p.add_argument("-v", "--verbose", action="store_true", help="check every kept version, not only the current one")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_health)

    p = sub.add_parser("validate", help="check a corpus before ingesting it (writes nothing)")
    _common(p)
    p.add_argument("folder", nargs="?", help="the corpus folder (default: corpus.path)")
    p.add_argument("--no-tokens", action="store_true", help="skip the model-window check (no tokenizer load)")
    p.add_argument("--output-json", metavar="FILE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("reset", help="remove this config's index and the cache entries only it uses")
    _common(p)
    p.add_argument("--yes", action="store_true", help="really remove (without it: show what would go, exit 2)")
    p.set_defaults(func=cmd_reset)

    p = sub.add_parser("import-beir", help="turn BEIR queries + qrels into a YAML test set")
    _common(p)
    p.add_argument("folder")
    p.add_argument("--split", default="test")
    p.add_argument("--output", "-o", default=None)
    p.set_defaults(func=cmd_import_beir)
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
