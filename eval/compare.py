"""Compare evaluation runs query by query: deltas, paired significance tests, wins/ties/losses, and the
queries that flipped (a relevant chunk in the top k before and not after, or the other way round).

Statistics are paired over the queries both runs answered:
- a randomisation (sign-flip permutation) test on the per-query differences, exact when there are at
  most 16 non-zero differences, else ``n_perm`` random sign vectors from a fixed seed;
- a paired t-test (scipy), p = 1 when every difference is zero.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import InputError

DEFAULT_METRICS = ("ndcg@10", "recall@10", "mrr@10", "precision@5")
TIE = 1e-9


def permutation_p(diffs: np.ndarray, n_perm: int = 10000, seed: int = 0) -> float:
    """Two-sided sign-flip randomisation test of mean(diffs) == 0."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.abs(d) > TIE]
    if d.size == 0:
        return 1.0
    observed = abs(d.mean())
    if d.size <= 16:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d.size)))
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((-1.0, 1.0), size=(n_perm, d.size))
    # zeros dropped above change every mean by the same factor, so the test is unchanged
    means = np.abs((signs * d).mean(axis=1))
    if d.size <= 16:
        return float(np.mean(means >= observed - 1e-12))
    return float((np.sum(means >= observed - 1e-12) + 1) / (n_perm + 1))


def paired_t_p(a: np.ndarray, b: np.ndarray) -> float:
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.size < 2 or np.all(np.abs(d) <= TIE):
        return 1.0
    if np.std(d, ddof=1) <= TIE:
        return 0.0  # a constant non-zero difference: as significant as it gets
    from scipy import stats

    return float(stats.ttest_rel(b, a).pvalue)


@dataclass
class MetricDelta:
    metric: str
    baseline: float
    candidate: float
    delta: float
    p_permutation: float
    p_ttest: float
    wins: int
    ties: int
    losses: int


@dataclass
class Flip:
    id: str
    query: str
    direction: str  # "lost" (relevant in top k before, not after) or "gained"
    rank_before: int | None  # rank of the first relevant chunk (None: not in the ranking)
    rank_after: int | None


@dataclass
class Comparison:
    baseline: str
    candidate: str
    testset: str
    n: int
    k: int
    metrics: list[MetricDelta]
    flips: list[Flip] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def first_relevant_rank(row: dict[str, Any]) -> int | None:
    """From the per-query row: the rank of the first relevant chunk (via MRR at the deepest k)."""
    mrrs = [(int(k.split("@")[1]), v) for k, v in row["metrics"].items() if k.startswith("mrr@")]
    if not mrrs:
        return None
    _, v = max(mrrs)
    return round(1 / v) if v > 0 else None


def compare(base: dict[str, Any], cand: dict[str, Any], metrics: tuple[str, ...] = DEFAULT_METRICS, k: int = 10,
            n_perm: int = 10000, seed: int = 0, base_name: str = "A", cand_name: str = "B") -> Comparison:
    warnings: list[str] = []
    if base.get("testset_sha256") and cand.get("testset_sha256") and base["testset_sha256"] != cand["testset_sha256"]:
        warnings.append("the two runs used different versions of the test set (sha256 differs); compared on shared ids")
    a_rows = {r["id"]: r for r in base["per_query"]}
    b_rows = {r["id"]: r for r in cand["per_query"]}
    ids = [i for i in a_rows if i in b_rows]
    if not ids:
        raise InputError(f"runs {base_name} and {cand_name} share no query ids: nothing to compare")
    if len(ids) < max(len(a_rows), len(b_rows)):
        warnings.append(f"{max(len(a_rows), len(b_rows)) - len(ids)} queries appear in only one run and were left out")
    out: list[MetricDelta] = []
    for m in metrics:
        if m not in a_rows[ids[0]]["metrics"] or m not in b_rows[ids[0]]["metrics"]:
            raise InputError(f"metric {m!r} is not in both runs (have: {sorted(a_rows[ids[0]]['metrics'])[:12]}…)")
        a = np.array([a_rows[i]["metrics"][m] for i in ids])
        b = np.array([b_rows[i]["metrics"][m] for i in ids])
        d = b - a
        out.append(MetricDelta(
            metric=m, baseline=float(a.mean()), candidate=float(b.mean()), delta=float(d.mean()),
            p_permutation=permutation_p(d, n_perm, seed), p_ttest=paired_t_p(a, b),
            wins=int(np.sum(d > TIE)), ties=int(np.sum(np.abs(d) <= TIE)), losses=int(np.sum(d < -TIE)),
        ))
    flips: list[Flip] = []
    hk = f"hit_rate@{k}"
    for i in ids:
        ra, rb = a_rows[i], b_rows[i]
        if hk not in ra["metrics"] or hk not in rb["metrics"]:
            raise InputError(f"flips need {hk} in both runs")
        before, after = ra["metrics"][hk] > 0, rb["metrics"][hk] > 0
        if before != after:
            flips.append(Flip(i, ra.get("query", ""), "lost" if before else "gained",
                              first_relevant_rank(ra), first_relevant_rank(rb)))
    flips.sort(key=lambda f: (f.direction != "lost", f.id))
    return Comparison(base_name, cand_name, str(base.get("testset", "")), len(ids), k, out, flips, warnings)


# ---- loading runs ----------------------------------------------------------------------------------
def load_run(ref: str, tracking_uri: str | None = None) -> tuple[str, dict[str, Any]]:
    """An eval JSON file (``ragrig eval --output-json``), or an MLflow run id or run name."""
    p = Path(ref)
    if p.is_file():
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}: not a JSON eval report ({exc.msg} at line {exc.lineno})") from None
        if "runs" in data:
            if len(data["runs"]) != 1:
                raise InputError(f"{p}: holds {len(data['runs'])} runs (one per test set); pass a single-run report")
            data = data["runs"][0]
        if "per_query" not in data:
            raise InputError(f"{p}: no per_query rows (is this a `ragrig eval --output-json` file?)")
        return p.stem, data
    return _load_mlflow(ref, tracking_uri)


def _load_mlflow(ref: str, tracking_uri: str | None) -> tuple[str, dict[str, Any]]:
    import mlflow
    from mlflow.tracking import MlflowClient

    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
    client = MlflowClient()
    run = None
    try:
        run = client.get_run(ref)
    except Exception:
        runs = mlflow.search_runs(search_all_experiments=True, filter_string=f"tags.`mlflow.runName` = '{ref}'",
                                  order_by=["start_time DESC"], max_results=1, output_format="list")
        run = runs[0] if runs else None
    if run is None:
        raise InputError(f"{ref!r} is neither a file nor an MLflow run id or run name (store: {mlflow.get_tracking_uri()})")
    try:
        local = client.download_artifacts(run.info.run_id, "report.json")
    except Exception:
        raise InputError(f"MLflow run {run.info.run_id} has no report.json artifact (logged by an older ragrig?)") from None
    data = json.loads(Path(local).read_text(encoding="utf-8"))
    return run.info.run_name or run.info.run_id, data


# ---- rendering --------------------------------------------------------------------------------------
def _p(v: float) -> str:
    return "<0.0001" if v < 1e-4 else f"{v:.4f}"


def to_markdown(c: Comparison) -> str:
    lines = [f"### {c.candidate} vs {c.baseline} on {c.testset} ({c.n} queries)", "",
             "| metric | baseline | candidate | Δ | p (perm) | p (t) | W / T / L |", "|---|---:|---:|---:|---:|---:|---|"]
    for m in c.metrics:
        lines.append(f"| {m.metric} | {m.baseline:.4f} | {m.candidate:.4f} | {m.delta:+.4f} | {_p(m.p_permutation)} | "
                     f"{_p(m.p_ttest)} | {m.wins} / {m.ties} / {m.losses} |")
    if c.flips:
        lines += ["", f"**Flipped queries** (relevant chunk in the top {c.k})", "",
                  "| query | flip | first relevant rank before → after |", "|---|---|---|"]
        for f in c.flips:
            lines.append(f"| {f.id} | {f.direction} | {f.rank_before or '–'} → {f.rank_after or '–'} |")
    for w in c.warnings:
        lines.append(f"\n> warning: {w}")
    return "\n".join(lines)


def print_comparison(c: Comparison) -> None:
    from ragrig.flows.report import console
    from rich.table import Table

    t = Table(title=f"{c.candidate} vs {c.baseline} on {c.testset} ({c.n} queries)", title_justify="left")
    for col in ("metric", "baseline", "candidate", "Δ", "p perm", "p t", "W/T/L"):
        t.add_column(col, justify="left" if col == "metric" else "right", no_wrap=True)
    for m in c.metrics:
        color = "green" if m.delta > TIE else "red" if m.delta < -TIE else ""
        delta = f"[{color}]{m.delta:+.4f}[/{color}]" if color else f"{m.delta:+.4f}"
        t.add_row(m.metric, f"{m.baseline:.4f}", f"{m.candidate:.4f}", delta, _p(m.p_permutation), _p(m.p_ttest),
                  f"{m.wins}/{m.ties}/{m.losses}")
    console.print(t)
    if c.flips:
        print(f"flipped queries (relevant chunk in the top {c.k}):")
        for f in c.flips:
            print(f"  {f.direction:6s} {f.id}: first relevant rank {f.rank_before or '-'} -> {f.rank_after or '-'}")
    for w in c.warnings:
        print(f"warning: {w}")
