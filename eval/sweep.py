"""Config sweeps: a base config plus a grid and/or explicit list of overrides, evaluated with shared work.

- An index is built once per distinct ingestion config (the config hash); chunks whose text is the same
  across chunking levels are embedded once (the embedding cache).
- Per index version, retrieval candidates (per source, per processed query, per depth) and query vectors
  are computed once and reused by every fusion / shaping variant.
- One MLflow parent run for the sweep, one nested child run per config; a summary table and plots of
  each metric against each swept parameter on the parent.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config
from ragrig.configs.models import RagrigConfig
from ragrig.configs.yamlio import load_yaml
from ragrig.retrieval.frozen_heap import frozen_heap


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    base: str | None = None  # a config file, relative to the sweep file
    set: list[str] = Field(default_factory=list)  # overrides applied to every config
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    configs: list[dict[str, Any]] = Field(default_factory=list)  # explicit override sets
    metric: str = "ndcg@10"
    testsets: list[str] = Field(default_factory=list)  # default: the base config's eval.testsets
    path: str | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _something(self) -> SweepSpec:
        if not self.grid and not self.configs:
            raise ValueError("a sweep needs a 'grid' and/or a list of 'configs'")
        for k, v in self.grid.items():
            if not isinstance(v, list) or not v:
                raise ValueError(f"grid.{k}: needs a non-empty list of values")
        return self


def load_sweep(path: str | Path) -> SweepSpec:
    p = Path(path)
    located = load_yaml(p)
    try:
        spec = SweepSpec.model_validate(located.data or {})
    except ValidationError as exc:
        raise located.validation_error(exc, "invalid sweep file") from None
    base_dir = p.resolve().parent
    if spec.base:
        spec.base = str((base_dir / spec.base).resolve())
    spec.testsets = [str((base_dir / t).resolve()) if not Path(t).is_absolute() else t for t in spec.testsets]
    spec.path = str(p)
    return spec


def _fmt(v: Any) -> str:
    """A value as a --set right-hand side (YAML flow style)."""
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("...").strip()


def expand(spec: SweepSpec) -> list[tuple[str, dict[str, Any]]]:
    """(label, overrides) for every config: the grid's cartesian product, then the explicit list."""
    out: list[tuple[str, dict[str, Any]]] = []
    keys = list(spec.grid)
    for values in itertools.product(*(spec.grid[k] for k in keys)) if keys else []:
        ov = dict(zip(keys, values))
        out.append((", ".join(f"{k.split('.')[-1]}={_fmt(v)}" for k, v in ov.items()), ov))
    for ov in spec.configs:
        out.append((", ".join(f"{k.split('.')[-1]}={_fmt(v)}" for k, v in ov.items()) or "base", dict(ov)))
    seen: set[str] = set()
    uniq = []
    for label, ov in out:
        key = repr(sorted(ov.items()))
        if key not in seen:
            seen.add(key)
            uniq.append((label, ov))
    return uniq


def resolve(spec: SweepSpec, extra: list[str] | None = None) -> list[tuple[str, dict[str, Any], RagrigConfig]]:
    """Validate every config before any work (a bad value fails the sweep at once, naming the config)."""
    out = []
    for label, ov in expand(spec):
        sets = [*spec.set, *(extra or []), *(f"{k}={_fmt(v)}" for k, v in ov.items())]
        try:
            cfg = load_config(spec.base, sets)
        except InputError as exc:
            raise InputError(f"sweep config '{label}': {exc}") from None
        out.append((label, ov, cfg))
    return out


@dataclass
class SweepRow:
    label: str
    overrides: dict[str, Any]
    index_key: str
    testset: str
    metrics: dict[str, float]
    seconds: float
    run_id: str | None = None


@dataclass
class IndexStats:
    index_key: str
    chunks: int
    embedded: int
    cached: int
    distinct_texts: int
    seconds: float


@dataclass
class SweepResult:
    name: str
    metric: str
    rows: list[SweepRow] = field(default_factory=list)
    indexes: list[IndexStats] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    parent_run_id: str | None = None

    @property
    def best(self) -> SweepRow | None:
        return max(self.rows, key=lambda r: (r.metrics.get(self.metric, float("-inf")), -self.rows.index(r)), default=None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        b = self.best
        d["best"] = asdict(b) if b else None
        return d


def swept_params(result: SweepResult) -> list[str]:
    keys: list[str] = []
    for r in result.rows:
        for k in r.overrides:
            if k not in keys:
                keys.append(k)
    return keys


def summary_markdown(result: SweepResult, metrics: tuple[str, ...] = ("ndcg@10", "recall@10", "mrr@10", "recall@100")) -> str:
    params = swept_params(result)
    lines = [f"### sweep {result.name}: {len(result.rows)} evaluations, best by {result.metric}", "",
             "| " + " | ".join([*params, "test set", *metrics]) + " |", "|" + "---|" * len(params) + "---|" + "---:|" * len(metrics)]
    best = result.best
    for r in result.rows:
        vals = [_fmt(r.overrides.get(p, "")) if p in r.overrides else "" for p in params]
        ms = [f"{r.metrics.get(m, float('nan')):.4f}" for m in metrics]
        if r is best:
            ms = [f"**{m}**" for m in ms]
        lines.append("| " + " | ".join([*vals, r.testset, *ms]) + " |")
    if result.indexes:
        lines += ["", "| index | chunks | embedded | from cache | distinct texts | seconds |", "|---|---:|---:|---:|---:|---:|"]
        for ix in result.indexes:
            lines.append(f"| {ix.index_key} | {ix.chunks} | {ix.embedded} | {ix.cached} | {ix.distinct_texts} | {ix.seconds:.1f} |")
    return "\n".join(lines)


def plot_metrics(result: SweepResult, out_dir: Path, metrics: tuple[str, ...] = ("ndcg@10", "recall@10")) -> list[Path]:
    """One PNG per swept parameter: each metric against the parameter's values (mean over the other params)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for p in swept_params(result):
        groups: dict[str, list[SweepRow]] = {}
        for r in result.rows:
            if p in r.overrides:
                groups.setdefault(_fmt(r.overrides[p]), []).append(r)
        if len(groups) < 2:
            continue
        xs = list(groups)
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in metrics:
            ys = [sum(r.metrics.get(m, 0.0) for r in groups[x]) / len(groups[x]) for x in xs]
            ax.plot(range(len(xs)), ys, marker="o", label=m)
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel(p)
        ax.set_ylabel("mean over the other swept values")
        ax.set_title(f"sweep {result.name}: {p}")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / f"sweep_{p.replace('.', '_')}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def run_sweep(spec: SweepSpec, extra: list[str] | None = None, *, log_mlflow: bool = True, progress: bool = True,
              stage: Any = None) -> SweepResult:
    """Run a sweep. ``stage(name, fn, *args)`` runs each step (default: call it; the Prefect flow in
    flows/sweep.py passes one that runs it as a task), so the sequence lives here only."""
    call = stage or (lambda name, fn, *args: fn(*args))
    from ragrig.eval.testset import load_testset

    t0 = time.perf_counter()
    configs = resolve(spec, extra)
    result = SweepResult(spec.name, spec.metric)
    testsets = spec.testsets or configs[0][2].eval.testsets
    if not testsets:
        raise InputError("sweep: no test set (set 'testsets' in the sweep file or eval.testsets in the base config)")
    sets = [load_testset(t) for t in testsets]
    groups: dict[str, list[tuple[str, dict[str, Any], RagrigConfig]]] = {}
    for item in configs:
        groups.setdefault(item[2].ingest_hash(), []).append(item)
    seen_texts: set[str] = set()
    parent = _start_parent(configs[0][2], spec) if log_mlflow and configs[0][2].mlflow.enabled else None
    try:
        with frozen_heap():
            _run_groups(spec, groups, sets, result, seen_texts, parent, call, progress)
    finally:
        result.seconds["total"] = time.perf_counter() - t0
        if parent is not None:
            _finish_parent(configs[0][2], result)
    return result


def _run_groups(spec: SweepSpec, groups: dict[str, list[tuple[str, dict[str, Any], RagrigConfig]]], sets: list[Any],
                result: SweepResult, seen_texts: set[str], parent: Any, call: Any, progress: bool) -> None:
    from ragrig.eval.evaluate import evaluate
    from ragrig.eval.relevance import resolve_testset
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.memo import CandidateMemo
    from ragrig.retrieval.search.retriever import Retriever

    for _, items in groups.items():
        cfg0 = items[0][2]
        t1 = time.perf_counter()
        stats = call("ingest", lambda c: IngestPipeline(c, progress=progress).run(), cfg0)
        version = IndexVersion.current(cfg0)
        seen_texts.update(c.sha256 for c in version.chunks)
        result.indexes.append(IndexStats(version.layout.key, len(version.chunks), stats.chunks_embedded,
                                         stats.chunks_cached, len(seen_texts), time.perf_counter() - t1))
        retriever = Retriever(cfg0, version)
        memo = CandidateMemo()  # candidates fetched once per index version, reused by every fusion/shaping variant
        resolved = [resolve_testset(ts, version.documents_by_id) for ts in sets]  # once per index
        for label, ov, cfg in items:
            for ts, targets in zip(sets, resolved):
                t2 = time.perf_counter()
                report = call("evaluate", lambda c, t, r, lb, tg: evaluate(c, t, r, label=lb, targets=tg, memo=memo),
                              cfg, ts, retriever, label, targets)
                run_id = None
                if parent is not None:
                    from ragrig.eval.mlflow_log import log_report

                    # the parent's experiment id: each child skips the experiment lookup
                    run_id = call("log-mlflow", lambda c, rep, name, keys: log_report(
                        c, rep, run_name=name, nested=True, plots=False, tags={"ragrig.sweep": spec.name},
                        param_keys=keys, experiment_id=parent.info.experiment_id,
                        parent_run_id=parent.info.run_id), cfg, report, f"{spec.name}: {label}", sorted(ov))
                result.rows.append(SweepRow(label, ov, version.layout.key, ts.name, report.overall,
                                            time.perf_counter() - t2, run_id))


def _start_parent(cfg: RagrigConfig, spec: SweepSpec) -> Any:
    import mlflow
    from ragrig.eval.mlflow_log import ensure_experiment, safe_params

    exp = ensure_experiment(cfg)
    run = mlflow.start_run(experiment_id=exp, run_name=f"sweep: {spec.name}", tags={"ragrig.sweep": spec.name})
    mlflow.log_params({"sweep.name": spec.name, "sweep.metric": spec.metric, "sweep.file": spec.path or "",
                       "sweep.configs": len(expand(spec))})
    # the base config once, here; each child run logs only its own overrides (and provenance)
    swept = {k for _, ov in expand(spec) for k in ov}
    base = safe_params({k: v for k, v in cfg.flat().items() if k not in swept})
    items = sorted(base.items())
    for i in range(0, len(items), 100):  # MLflow takes at most 100 params per call
        mlflow.log_params(dict(items[i : i + 100]))
    return run


def _finish_parent(cfg: RagrigConfig, result: SweepResult) -> None:
    import json
    import tempfile

    import mlflow

    try:
        best = result.best
        if best is not None:
            mlflow.log_metric(f"best.{result.metric.replace('@', '_at_')}", best.metrics.get(result.metric, 0.0))
            mlflow.set_tag("ragrig.best", best.label)
        mlflow.log_metric("seconds.total", result.seconds.get("total", 0.0))
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            (t / "sweep_summary.md").write_text(summary_markdown(result))
            (t / "sweep.json").write_text(json.dumps(result.to_dict(), indent=1, default=str))
            plot_metrics(result, t)
            mlflow.log_artifacts(str(t))
        result.parent_run_id = mlflow.active_run().info.run_id
    finally:
        mlflow.end_run()
