"""Compare evaluation runs query by query: deltas, paired significance tests, wins/ties/losses, the queries
that flipped (a relevant chunk in the top k before and not after, or the other way round), and the hops: each
run's mean recall gain per hop and the cases whose hops asked for or found something else
(``eval.hop_diagnostics``).

Statistics (``eval.stats``) are paired over the queries both runs answered. The terminal rendering lives in
``flows/render/compare.py``; this module returns data and Markdown.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.eval.hop_diagnostics import hop_changes
from ragrig.eval.metrics import COMPARED
from ragrig.eval.stats import TIE, paired_t_p, permutation_p


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
    hop_gains: dict[str, dict[str, float]] = field(default_factory=dict)  # hop -> {baseline, candidate}
    hop_changes: list[dict[str, Any]] = field(default_factory=list)
    search: dict[str, str] = field(default_factory=dict)  # run -> the vector search that answered it
    machines: dict[str, str] = field(default_factory=dict)  # run -> the CPU it ran on ("unknown": not recorded)
    search_note: str = ""  # what that means for the differences (``search_note``)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


NOISE = ("Chroma's HNSW seeds its graph randomly: rebuilding the same index moved nDCG@10 by up to ~0.01 on SRD 5.1 "
         "(docs/determinism.md), so differences of that size may be noise")


def _index_field(run: dict[str, Any], key: str) -> Any:
    """``run["index"][key]`` of a report as read from a file (anyone can edit it: None where it is not there)."""
    index = run.get("index")
    return index.get(key) if isinstance(index, dict) else None


def vector_search_of(run: dict[str, Any]) -> str:
    """What answered a run's vector queries (``unknown``: written before reports recorded it, or not a search's
    name: a hand-edited report's value reaches terminals, Markdown and JUnit)."""
    raw = _index_field(run, "vector_search")
    return raw if isinstance(raw, str) and re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", raw) else "unknown"


def machine_of(run: dict[str, Any]) -> str:
    """The CPU a run's numbers came from (``retrieval/machine.py``; ``unknown``: written before reports
    recorded it). A report is a file anyone can edit and the value reaches terminals, Markdown and JUnit: only
    the characters ``machine.kind`` writes are kept, 120 at most."""
    raw = _index_field(run, "machine")
    kept = re.sub(r"[^A-Za-z0-9_+. -]", "", raw)[:120].strip() if isinstance(raw, str) else ""
    return kept or "unknown"


def search_note(base: str, cand: str, machines: tuple[str, str] = ("unknown", "unknown")) -> str:
    """One line for every comparison: which vector search answered each run, and whether a difference between
    them can be approximate-search noise, or, with exact search, another CPU's rounding."""
    both = base if base == cand else f"{base} (baseline) and {cand} (candidate)"
    if base == cand == "exact":
        a, b = machines
        if "unknown" in machines:
            return ("vector search: exact in both runs (deterministic on one kind of CPU; a run written before "
                    "reports recorded the CPU may come from another, whose kernels round differently: "
                    "docs/determinism.md)")
        if a != b:
            return (f"vector search: exact in both runs, but on different CPUs ({a} (baseline), {b} (candidate)): "
                    "their kernels round differently, so every vector's last bits differ and a small difference "
                    "may be the machine's, not the change's (docs/determinism.md)")
        return "vector search: exact in both runs (deterministic: every difference comes from the change itself)"
    if "chroma" in (base, cand):
        return f"vector search: {both}. {NOISE}"
    if "unknown" in (base, cand):
        return (f"vector search: {both}: a run written before reports recorded its search may have used Chroma's "
                "HNSW, whose answers vary between builds; re-run it to compare exactly")
    if base != cand:
        return (f"vector search: {both}: the two runs searched differently, so part of any difference comes from "
                "the approximate search (seeded HNSW, the same answers for the same index)")
    return ("vector search: hnsw in both runs (seeded, one build thread: the same index gives the same answers; "
            "a changed index may find other neighbours, within its recall)")


def first_relevant_rank(row: dict[str, Any]) -> int | None:
    """From the per-query row: the rank of the first relevant chunk (via MRR at the deepest k)."""
    mrrs = [(int(k.split("@")[1]), v) for k, v in row["metrics"].items() if k.startswith("mrr@")]
    if not mrrs:
        return None
    _, v = max(mrrs)
    return round(1 / v) if v > 0 else None


def compare(base: dict[str, Any], cand: dict[str, Any], metrics: tuple[str, ...] = COMPARED, k: int = 10,
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
            raise InputError(f"-k {k}: flipped queries need {hk} in both runs (an eval reports the k of its "
                             "eval.k_values)")
        before, after = ra["metrics"][hk] > 0, rb["metrics"][hk] > 0
        if before != after:
            flips.append(Flip(i, ra.get("query", ""), "lost" if before else "gained",
                              first_relevant_rank(ra), first_relevant_rank(rb)))
    flips.sort(key=lambda f: (f.direction != "lost", f.id))
    gains_a = base.get("hop_gains", {}).get("overall", {})
    gains_b = cand.get("hop_gains", {}).get("overall", {})
    gains = {h: {"baseline": gains_a.get(h, 0.0), "candidate": gains_b.get(h, 0.0)}
             for h in sorted(set(gains_a) | set(gains_b), key=int)}
    kinds = {"baseline": vector_search_of(base), "candidate": vector_search_of(cand)}
    machines = {"baseline": machine_of(base), "candidate": machine_of(cand)}
    return Comparison(base_name, cand_name, str(base.get("testset", "")), len(ids), k, out, flips, warnings,
                      gains, hop_changes(a_rows, b_rows, ids), kinds, machines,
                      search_note(*kinds.values(), (machines["baseline"], machines["candidate"])))


# ---- loading runs ----------------------------------------------------------------------------------
def load_run(ref: str, tracking_uri: str | None = None) -> tuple[str, dict[str, Any]]:
    """An eval JSON file (``ragrig eval --output-json``), or an MLflow run id or run name."""
    p = Path(ref)
    if p.is_file():
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}: not a JSON eval report ({exc.msg} at line {exc.lineno})") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{p}: not a JSON eval report (not UTF-8 text: byte {exc.start})") from None
        if not isinstance(data, dict):
            raise InputError(f"{p}: not a JSON eval report (a {type(data).__name__}, not an object)")
        if "runs" in data:
            if not isinstance(data["runs"], list) or len(data["runs"]) != 1:
                raise InputError(f"{p}: holds {len(data['runs'])} runs (one per test set); pass a single-run report")
            data = data["runs"][0]
        if not isinstance(data, dict) or "per_query" not in data:
            raise InputError(f"{p}: no per_query rows (is this a `ragrig eval --output-json` file?)")
        check_report(data, str(p))
        return p.stem, data
    name, data = _load_mlflow(ref, tracking_uri)
    check_report(data, f"MLflow run {ref}")
    return name, data


def check_report(data: Any, where: str) -> None:
    """An eval report's rows hold what a comparison reads: one row per query id, each metric a finite number;
    else one line naming the report, the query and the metric."""
    rows = data.get("per_query") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"{where}: per_query is not a list of rows")
    seen: set[Any] = set()
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str | int) or \
                not isinstance(row.get("metrics"), dict):
            raise InputError(f"{where}: per_query[{n}] is not a row with an id and metrics")
        if row["id"] in seen:
            raise InputError(f"{where}: query id {row['id']!r} appears twice in per_query")
        seen.add(row["id"])
        for m, v in row["metrics"].items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise InputError(f"{where}: query {row['id']!r}: {m} is {v!r}, not a finite number")


def _load_mlflow(ref: str, tracking_uri: str | None) -> tuple[str, dict[str, Any]]:
    from ragrig.eval.tracking.store import sqlite_file

    db = sqlite_file(tracking_uri) if tracking_uri else None
    if db is not None and not db.exists():  # no store yet, so no runs: say so without asking MLflow (it makes one)
        raise InputError(f"{ref!r} is neither a file nor an MLflow run id or run name "
                         f"(store: {tracking_uri}, which holds no runs yet)")
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
        raise InputError(f"{ref!r} is neither a file nor an MLflow run id or run name "
                         f"(store: {mlflow.get_tracking_uri()})")
    try:
        local = client.download_artifacts(run.info.run_id, "report.json")
    except Exception:
        raise InputError(f"MLflow run {run.info.run_id} has no report.json artifact "
                         "(logged by an older ragrig?)") from None
    data = json.loads(Path(local).read_text(encoding="utf-8"))
    return run.info.run_name or run.info.run_id, data


# ---- Markdown ---------------------------------------------------------------------------------------
def format_p(v: float) -> str:
    return "<0.0001" if v < 1e-4 else f"{v:.4f}"


def to_markdown(c: Comparison) -> str:
    lines = [f"### {c.candidate} vs {c.baseline} on {c.testset} ({c.n} queries)", "", f"{c.search_note}.", "",
             "| metric | baseline | candidate | Δ | p (perm) | p (t) | W / T / L |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for m in c.metrics:
        lines.append(f"| {m.metric} | {m.baseline:.4f} | {m.candidate:.4f} | {m.delta:+.4f} | "
                     f"{format_p(m.p_permutation)} | {format_p(m.p_ttest)} | {m.wins} / {m.ties} / {m.losses} |")
    if c.flips:
        lines += ["", f"**Flipped queries** (relevant chunk in the top {c.k})", "",
                  "| query | flip | first relevant rank before → after |", "|---|---|---|"]
        for f in c.flips:
            lines.append(f"| {f.id} | {f.direction} | {f.rank_before or '–'} → {f.rank_after or '–'} |")
    if c.hop_gains:
        lines += ["", "**Recall gain per hop** (expected sections a hop brought into the top 10)", "",
                  "| hop | baseline | candidate |", "|---|---:|---:|"]
        lines += [f"| {h} | {g['baseline']:.4f} | {g['candidate']:.4f} |" for h, g in c.hop_gains.items()]
    if c.hop_changes:
        lines += ["", "**Cases whose hops changed**", "", "| case | before | after |", "|---|---|---|"]
        lines += [f"| {h['id']} | {h['before']} | {h['after']} |" for h in c.hop_changes]
    for w in c.warnings:
        lines.append(f"\n> warning: {w}")
    return "\n".join(lines)

