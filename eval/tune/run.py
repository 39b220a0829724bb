"""Run a tune: every candidate evaluated once over every case through the sweep's machinery (one ingest per
index, a ``CandidateMemo`` per index, a nested MLflow run per candidate), then nested selection over the
per-case scores, the fold scores attached to each candidate's run, and the winner written only when its
held-out gain is significant.

Cost: the candidates' evaluations (shared candidates make them cheaper than one ``ragrig eval`` each), the
ingests a new chunking or encoder needs, and, per candidate, one small MLflow update with its fold scores;
the selection itself is array arithmetic over a candidates x cases matrix (benchmarks/tune_cost.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.eval.report import EvalReport
from ragrig.eval.sweep.adapted import runnable, with_trained
from ragrig.eval.sweep.result import SweepRow
from ragrig.eval.sweep.parent import mark_parent, run_status
from ragrig.eval.sweep.run import run_sweep
from ragrig.eval.sweep.spec import Resolved
from ragrig.eval.testset import TestSet, check_distinct, load_testset
from ragrig.eval.tune.folds import assign_folds, check_folds, split_holdout, stratum
from ragrig.eval.tune.report import CandidateRow, TuneResult, summary_markdown
from ragrig.eval.tune.select import bootstrap_ci, decide, nested, per_tag, pick
from ragrig.eval.sweep.spec import describe
from ragrig.eval.tune.space import DEFAULT_LABEL, TuneSpace, resolve_space
from ragrig.retrieval.executor import IN_PROCESS, Executor

Step = Callable[[int, int, str], None]
"""progress(done, total, label) after each candidate's evaluation."""


def load_cases(paths: list[str]) -> tuple[list[TestSet], list[str], list[list[str]]]:
    """The test sets, each case's key (``set/id`` when there are several sets) and tags."""
    if not paths:
        raise InputError("tune: no test set (--testset FILE, 'testsets' in the space file, or eval.testsets)")
    sets = [load_testset(p) for p in paths]
    check_distinct(sets)  # the same set twice would leave cases unscored, found only after every candidate ran
    keys, tags = [], []
    for ts in sets:
        for c in ts.cases:
            keys.append(f"{ts.name}/{c.id}" if len(sets) > 1 else c.id)
            tags.append(list(c.tags))
    return sets, keys, tags


def run_tune(spec: TuneSpace, extra: list[str] | None = None, *, configs: Resolved | None = None,
             testsets: list[str] | None = None, holdout: float | None = None, write: str | Path | None = None,
             log_mlflow: bool = True, progress: bool = False, step: Step | None = None,
             holdout_seeds: list[int] | None = None, executor: Executor = IN_PROCESS) -> TuneResult:
    """``holdout``: the honesty check (tune on 1-F of the cases, score the pick on the other F; nothing written),
    with ``spec.seed``'s split; ``holdout_seeds``: the same check repeated for each of these seeds (split, folds
    and bootstrap) over the one evaluation, in ``result.holdout_runs`` (the first is ``result.holdout``).
    ``executor``: where the candidates are evaluated (``run_sweep``'s; a distributed one: tasks on a Dask cluster)."""
    t0 = time.perf_counter()
    items = configs if configs is not None else resolve_space(spec, extra)
    cfg0 = items[0][2]
    paths = list(testsets or spec.testsets or cfg0.eval.testsets)
    sets, keys, tags = load_cases(paths)
    where = ", ".join(str(p) for p in paths)
    k_at = int(spec.metric.partition("@")[2])
    if k_at not in cfg0.eval.k_values:
        raise InputError(f"{spec.path}: metric: {spec.metric} needs k={k_at} in eval.k_values {cfg0.eval.k_values}")
    strata = [stratum(t) for t in tags]
    if holdout_seeds and holdout is None:
        raise InputError("tune: --holdout-seeds needs --holdout-fraction (the share of cases each seed holds out)")
    seeds = list(dict.fromkeys(holdout_seeds or [spec.seed]))
    if any(s < 0 for s in seeds):
        raise InputError(f"tune: --holdout-seeds {' '.join(map(str, holdout_seeds or []))}: a seed is a whole number "
                         "0 or more")
    for seed in seeds:  # every split checked before any work
        _split(strata, holdout, seed, spec, where)

    # evaluate every candidate once over every case (the sweep's shared indexes, memos and MLflow runs)
    labels = [label for label, _, _ in items]
    col = {key: i for i, key in enumerate(keys)}
    scores = np.full((len(items), len(keys)), np.nan)
    rows: dict[str, list[SweepRow]] = {label: [] for label in labels}
    done = [0]
    total = len(items) * len(sets)

    def collect(row: SweepRow, report: EvalReport) -> None:
        c = labels.index(row.label)
        for q in report.per_query:
            key = f"{report.testset}/{q['id']}" if len(sets) > 1 else q["id"]
            scores[c, col[key]] = q["metrics"][spec.metric]
        rows[row.label].append(row)
        done[0] += 1
        if step is not None:
            step(done[0], total, row.label)

    sweep_spec = spec.model_copy(update={"testsets": paths})
    sweep = run_sweep(sweep_spec, extra, log_mlflow=log_mlflow, progress=progress, configs=items, on_report=collect,
                      executor=executor)
    try:
        if np.isnan(scores).any():
            raise InputError(f"tune: some cases got no score ({int(np.isnan(scores).sum())}); check the test sets")
        t1 = time.perf_counter()
        runs = [_choose(spec.model_copy(update={"seed": seed}), scores, items, rows, sets, tags, strata, holdout,
                        where) for seed in seeds]
        result = runs[0]
        result.winner_trained = sweep.trained.get(result.winner, {})  # an adapted winner: its folders
        if holdout is not None:
            result.holdout_runs = [r.holdout for r in runs if r.holdout is not None]
        elif result.significant and write:
            trained = result.winner_trained  # the folders it was evaluated with, not the base model
            result.written = write_winner(Path(write), with_trained(items[labels.index(result.winner)][2], trained),
                                          result, trained)
        result.indexes = [vars(ix) for ix in sweep.indexes]
        result.parent_run_id = sweep.parent_run_id
        result.seconds = {"evaluate": t1 - t0, "select": time.perf_counter() - t1,
                          "sweep": sweep.seconds.get("total", 0.0)}
        if sweep.parent_run_id:
            _log(cfg0, result)
        result.seconds["total"] = time.perf_counter() - t0
        return result
    except BaseException as exc:  # the sweep ended its parent FINISHED: a failure (or Ctrl-C) here is the tune's
        mark_parent(sweep.parent_run_id, run_status(exc))
        raise


def _split(strata: list[str], holdout: float | None, seed: int, spec: TuneSpace,
           where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(held-out mask, the tuning cases' indexes, their folds) for ``seed``; a split that leaves a fold empty of a
    stratum is an error naming the test set."""
    held = split_holdout(strata, holdout, seed) if holdout is not None else np.zeros(len(strata), dtype=bool)
    tune_idx = np.nonzero(~held)[0]
    check_folds(spec.folds, [strata[i] for i in tune_idx], where + (" (the tuning part)" if holdout else ""),
                spec.stratify, holdout=holdout is not None)
    return held, tune_idx, assign_folds([strata[i] for i in tune_idx], spec.folds, seed, spec.stratify)


def _choose(spec: TuneSpace, scores: np.ndarray, items: Resolved, rows: dict[str, list[SweepRow]],
            sets: list[TestSet], tags: list[list[str]], strata: list[str], holdout: float | None,
            where: str) -> TuneResult:
    """Nested selection over the candidates x cases ``scores`` with ``spec.seed``'s folds (and held-out split)."""
    labels = [label for label, _, _ in items]
    held, tune_idx, folds = _split(strata, holdout, spec.seed, spec, where)
    sub = scores[:, tune_idx]
    n = nested(sub, folds, spec.folds)
    winner = pick(sub, np.ones(sub.shape[1], dtype=bool))
    dec = decide(n, spec.alpha, winner, boot=spec.bootstrap, seed=spec.seed)
    cands = []
    for c, (label, ov, _) in enumerate(items):
        r = rows[label]
        cands.append(CandidateRow(label, ov, r[0].index_key if r else "", float(sub[c].mean()),
                                  [float(sub[c, folds == f].mean()) for f in range(spec.folds)],
                                  n.picks.count(c), sum(x.seconds for x in r), [x.run_id for x in r if x.run_id]))
    result = TuneResult(
        name=spec.name, metric=spec.metric, folds=spec.folds, seed=spec.seed, alpha=spec.alpha,
        cases=int(len(tune_idx)), testsets=[ts.name for ts in sets], candidates=cands,
        fold_sizes=[int((folds == f).sum()) for f in range(spec.folds)], picks=[labels[p] for p in n.picks],
        estimate=n.estimate, estimate_ci=bootstrap_ci(n.case_scores, spec.bootstrap, spec.seed),
        default_estimate=n.default_estimate, default_ci=bootstrap_ci(n.case_default, spec.bootstrap, spec.seed),
        gain=dec.gain, gain_ci=dec.gain_ci, p=dec.p, significant=dec.significant, reason=dec.reason,
        winner=labels[winner], winner_overrides=items[winner][1],
        per_tag=per_tag(n, [tags[i] for i in tune_idx]))
    if holdout is not None:
        h = np.nonzero(held)[0]
        lo, hi = result.estimate_ci
        held_score, held_default = float(scores[winner, h].mean()), float(scores[0, h].mean())
        glo, ghi = result.gain_ci
        # the level moves with how hard each half's cases are (the default moves with it); the gain over the
        # default on the same cases is what the decision rests on, so both are checked
        result.holdout = {"fraction": holdout, "seed": spec.seed, "tune_cases": int(len(tune_idx)),
                          "held_cases": int(len(h)), "pick": labels[winner], "held_score": held_score,
                          "held_default": held_default, "estimate": result.estimate,
                          "estimate_ci": [lo, hi], "within": bool(lo <= held_score <= hi),
                          "held_gain": held_score - held_default, "gain": result.gain, "gain_ci": [glo, ghi],
                          "gain_within": bool(glo <= held_score - held_default <= ghi)}
    return result


def write_winner(path: Path, cfg: Any, r: TuneResult, trained: dict[str, str] | None = None) -> str:
    """The winner's whole config; an adapted winner's with the folders it was evaluated with (``trained``)."""
    from ragrig.retrieval.index.files import write_atomic

    head = (f"# Chosen by `ragrig tune` ({r.name}, {r.metric}, {r.folds}-fold nested CV, seed {r.seed}) on "
            f"{', '.join(r.testsets)}:\n# held-out {r.estimate:.4f} vs the default's {r.default_estimate:.4f}, gain "
            f"{r.gain:+.4f} [{r.gain_ci[0]:.4f}, {r.gain_ci[1]:.4f}], p={r.p:.3g}.\n# Overrides: "
            f"{describe(runnable(r.winner_overrides, trained or {}))}\n")
    if trained:
        head += f"# Trained by `ragrig adapt` (set below): {describe(trained)}\n"
    write_atomic(path, (head + cfg.to_yaml()).encode())
    return str(path)


def _log(cfg: Any, r: TuneResult) -> None:
    """Fold scores on each candidate's run; the held-out estimate, verdict and summary on the parent."""
    import json

    from ragrig.eval.tracking.runs import attach

    for c in r.candidates:
        metrics = {f"tune.fold.{f}.{r.metric}": v for f, v in enumerate(c.fold_means)}
        metrics.update({f"tune.{r.metric}": c.mean, "tune.chosen_folds": float(c.chosen)})
        for run_id in c.run_ids:
            attach(cfg, run_id, {}, metrics, {"ragrig.tune": r.name, "ragrig.tune.winner": str(c.label == r.winner)})
    attach(cfg, r.parent_run_id or "", {"tune_summary.md": summary_markdown(r),
                                        "tune.json": json.dumps(r.to_dict(), indent=1, default=str)},
           {"tune.heldout": r.estimate, "tune.heldout.lo": r.estimate_ci[0], "tune.heldout.hi": r.estimate_ci[1],
            "tune.default": r.default_estimate, "tune.gain": r.gain, "tune.p": r.p},
           {"ragrig.tune": r.name, "ragrig.tune.verdict": r.verdict, "ragrig.tune.winner": r.winner,
            "ragrig.tune.default_label": DEFAULT_LABEL})
    from mlflow.tracking import MlflowClient

    MlflowClient().update_run(r.parent_run_id or "", name=f"tune: {r.name}")  # the sweep machinery named it
