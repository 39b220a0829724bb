"""A cold ``ragrig query``: one question from process start to the printed answer, stage by stage.

Each run is a fresh process. The stages are timed without changing the code under test: a child process wraps
the functions the query path calls (by name; a name a tree lacks is skipped) with ``time.perf_counter``
checkpoints, each stage timed exclusive of the stages nested in it, then calls the real ``ragrig.flows.cli.main``:

    python start + exit   interpreter start-up and shutdown (the wall clock less what the child timed inside)
    imports               ``import ragrig.flows.cli`` (the command line and what it imports at start)
    config                ``load_config`` (layering, validation)
    model import          the embedding backend's own library: ``import torch`` (or onnxruntime)
    model load            the embedding model's load: weights and tokenizer, and what else the path imports for
                          it (sentence-transformers, transformers and scikit-learn, where a tree loads the model
                          through sentence-transformers; none where it runs the lean forward: ``bert_forward.py``)
    index open            ``Retriever.__init__`` less the model, rerank model and warm-up (chunks, BM25, vectors)
    warm-up               ``Retriever._warm`` (pages the vectors and BM25 in before the first query)
    rerank load           the cross-encoder, when rerank is on
    query embed           ``Embedder.encode_queries`` (the first call pays torch's first-run costs)
    search                ``Retriever.search`` less the embedding
    output                rendering (``print_query``, rich's import)
    other                 the rest of ``main`` (argument parsing, quiet environment, synonyms)

The floor is measured in the same run: a bare interpreter that imports torch (or onnxruntime), loads the model's
weights and tokenizer and encodes the question, which any local answer pays (for a model ``bert_forward.py``
runs, its lean forward; otherwise sentence-transformers). Several trees compare side by side, in
interleaved rounds (``--variant before=/work/main/.venv/bin/python``: that interpreter's ragrig); every
variant's printed answer must be the same.

    python benchmarks/cold_query.py -c configs/srd.yaml --query "how does grappling work?" --repeats 5 \\
        --variant before=/work/main/.venv/bin/python --variant after=.venv/bin/python

Writes benchmarks/results/cold_query.json (``--out``) and prints a Markdown table (medians over the repeats).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
STAGES = ("python start + exit", "imports", "config", "model import", "model load", "index open", "warm-up",
          "rerank load", "query embed", "search", "output", "other")
FLOOR_CHILD = """
import json, sys, time
t0 = time.perf_counter()
backend, target, query = sys.argv[1:4]
if backend == "torch":
    import torch
    t1 = time.perf_counter()
    from ragrig.retrieval.encoders.bert_forward import BertForward
    model = BertForward.open(target)
    if model is None:
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(target, device="cpu")
        t2 = time.perf_counter()
        model.encode([query], convert_to_numpy=True)
    else:
        t2 = time.perf_counter()
        model.encode([query], batch_size=32, normalize=True)
else:
    from ragrig.retrieval.embedding import Embedder
    from ragrig.configs.models import EmbeddingConfig
    t1 = time.perf_counter()
    e = Embedder(EmbeddingConfig(model=target, backend="onnx"))
    e.model
    t2 = time.perf_counter()
    e.encode_queries([query])
t3 = time.perf_counter()
print("FLOOR " + json.dumps({"import": t1 - t0, "load": t2 - t1, "encode": t3 - t2}), file=sys.stderr)
"""


# ---- the child: the real main, with perf_counter checkpoints around named functions ----------------------
class Clock:
    """Exclusive time per stage: a stage's time less the time of the stages called inside it."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []
        self.ms: dict[str, float] = {}

    def wrap(self, stage: str, fn: Any) -> Any:
        clock = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            frame = [stage, time.perf_counter(), 0.0]  # stage, start, time inside nested stages
            clock.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                clock.stack.pop()
                took = time.perf_counter() - frame[1]
                clock.ms[stage] = clock.ms.get(stage, 0.0) + (took - frame[2]) * 1000
                if clock.stack:
                    clock.stack[-1][2] += took

        return timed


def _patch(clock: Clock) -> None:
    """Wrap what the query path calls; names a tree does not have are skipped."""
    import importlib

    def attr(mod: str, owner: str | None, name: str, stage: str, prop: bool = False) -> None:
        try:
            target = importlib.import_module(mod)
            if owner:
                target = getattr(target, owner)
            fn = getattr(target, name) if not prop else target.__dict__[name]
        except (ImportError, AttributeError, KeyError):
            return
        if prop:
            setattr(target, name, property(clock.wrap(stage, fn.fget), fn.fset))
        else:
            setattr(target, name, clock.wrap(stage, fn))

    def model(self: Any) -> Any:  # the backend's import apart from the model's load
        if getattr(self, "_model", None) is None:
            backend = self.ref.backend
            mod = {"torch": "torch", "onnx": "onnxruntime"}.get(backend)
            if mod and mod not in sys.modules:
                clock.wrap("model import", importlib.import_module)(mod)
        return real_model(self)

    from ragrig.retrieval.embedding import Embedder

    real_model = Embedder.__dict__["model"].fget
    Embedder.model = property(clock.wrap("model load", model))
    attr("ragrig.flows.cli", None, "load_config", "config")
    attr("ragrig.flows.cli", None, "main", "other")
    attr("ragrig.retrieval.search.retriever", "Retriever", "__init__", "index open")
    attr("ragrig.retrieval.search.retriever", "Retriever", "_warm", "warm-up")
    attr("ragrig.retrieval.search.retriever", "Retriever", "reranker", "rerank load")
    attr("ragrig.retrieval.search.retriever", "Retriever", "search", "search")
    attr("ragrig.retrieval.embedding", "Embedder", "encode_queries", "query embed")
    attr("ragrig.flows.render.query", None, "print_query", "output")


def child(argv: list[str]) -> None:
    """The real ``main()`` on this command line (as the ``ragrig`` script calls it), its stages timed."""
    t0 = time.perf_counter()
    import ragrig.flows.cli as cli

    clock = Clock()
    clock.ms["imports"] = (time.perf_counter() - t0) * 1000
    _patch(clock)

    def report() -> None:
        clock.ms["inside"] = (time.perf_counter() - t0) * 1000
        sys.stdout.flush()
        print("STAGES " + json.dumps(clock.ms), file=sys.stderr, flush=True)

    quick = getattr(cli, "_quick_exit", None)  # a tree that ends `query` without the interpreter's teardown
    if quick is not None:
        cli._quick_exit = lambda code: (report(), quick(code))
    sys.argv = ["ragrig", *argv]
    code = cli.main()
    report()
    sys.exit(code)


# ---- the parent ---------------------------------------------------------------------------------------------
def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = (time.perf_counter() - t0) * 1000
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return wall, p.stdout, p.stderr


def floor_of(python: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, float]:
    """A bare interpreter importing the embedding backend, loading the model and encoding the question."""
    from ragrig.configs.load import load_config
    from ragrig.retrieval.encoders.resolve import resolve

    cfg = load_config(args.config, args.set)
    ref = resolve(cfg.embedding)
    wall, _, err = run([python, "-c", FLOOR_CHILD, ref.backend, ref.target, args.query], env)
    parts = json.loads(err.split("FLOOR ", 1)[1].strip().splitlines()[0])
    return {"wall": wall, **{k: v * 1000 for k, v in parts.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", "-c", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--query", default="how does grappling work?")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=PYTHON",
                    help="an interpreter whose ragrig runs the query (repeatable; default: this one)")
    ap.add_argument("--extra", action="append", default=[], metavar="ARG", help="more `ragrig query` arguments")
    ap.add_argument("--out", default=str(OUT / "cold_query.json"))
    args = ap.parse_args()
    variants = dict(v.split("=", 1) for v in args.variant) or {"this tree": sys.executable}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    qargs = ["query", args.query, "--local", *(["-c", args.config] if args.config else []),
             *[x for s in args.set for x in ("--set", s)], *args.extra]
    rows: dict[str, dict[str, list[float]]] = {v: {} for v in [*variants, "floor"]}
    outputs: dict[str, set[str]] = {v: set() for v in variants}
    load = os.getloadavg()
    for rnd in range(args.repeats + 1):  # round 0 warms the page cache and is not counted
        for label, python in variants.items():
            wall, _, err = run([python, __file__, "--child", *qargs], env)
            stages = json.loads(err.split("STAGES ", 1)[1].strip().splitlines()[0])
            plain, out, _ = run([python, "-m", "ragrig", *qargs], env)
            outputs[label].add(out)
            if rnd == 0:
                continue
            got = rows[label]
            stages["python start + exit"] = wall - stages.pop("inside")
            for s in STAGES:
                got.setdefault(s, []).append(stages.get(s, 0.0))
            got.setdefault("total (instrumented)", []).append(wall)
            got.setdefault("total (plain `python -m ragrig query`)", []).append(plain)
        fl = floor_of(sys.executable, args, env)  # this tree: its lean forward where it has one
        if rnd:
            for k, v in fl.items():
                rows["floor"].setdefault(k, []).append(v)
        print(f"round {rnd}: " + ", ".join(f"{lab} {rows[lab].get('total (instrumented)', [0])[-1]:.0f} ms"
                                           for lab in variants), file=sys.stderr, flush=True)
    same = len({o for outs in outputs.values() for o in outs}) == 1
    med = {v: {s: statistics.median(xs) for s, xs in st.items()} for v, st in rows.items()}
    result = {"config": args.config, "set": args.set, "query": args.query, "repeats": args.repeats,
              "load_before": load, "load_after": os.getloadavg(), "variants": variants, "same_output": same,
              "median_ms": med, "runs_ms": rows, "date": time.strftime("%Y-%m-%d %H:%M")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    labels = list(variants)
    print(f"\ncold `ragrig query`, median of {args.repeats} (ms); load {load[0]:.1f} -> {os.getloadavg()[0]:.1f}; "
          f"same output in every variant: {same}\n")
    print("| stage | " + " | ".join(labels) + " |\n|---|" + "---:|" * len(labels))
    for s in [*STAGES, "total (instrumented)", "total (plain `python -m ragrig query`)"]:
        print(f"| {s} | " + " | ".join(f"{med[v].get(s, 0):.0f}" for v in labels) + " |")
    f = med["floor"]
    print(f"\nfloor (bare interpreter: backend import {f['import']:.0f} + model load {f['load']:.0f} + encode "
          f"{f['encode']:.0f}): {f['wall']:.0f} ms wall")
    for v in labels:
        print(f"{v}: above the floor {med[v]['total (plain `python -m ragrig query`)'] - f['wall']:.0f} ms")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        main()
