"""The sweep's MLflow parent run: opened before the first evaluation with the sweep's settings and the base
config (each child run logs only its own overrides and the provenance), closed with the best config, the
summary table, sweep.json and the per-parameter plots."""

from __future__ import annotations

import json
import secrets
import tempfile
from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.eval.sweep.result import SweepResult
from ragrig.eval.sweep.spec import SweepSpec, expand
from ragrig.eval.sweep.summary import plot_metrics, summary_markdown
from ragrig.eval.tracking.orphans import owner_tags
from ragrig.eval.tracking.runs import RunOptions, metric_name
from ragrig.eval.tracking.secrets import safe_params
from ragrig.eval.tracking.store import ensure_experiment

START_TAG = "ragrig.sweep.start"  # a token per parent run opened (``start_parent``)


def release_interrupted() -> None:
    """Let go of what the exception being handled holds (and the ones it happened during): an interrupt that lands
    inside a store write leaves that write's session, and its SQLite write lock, referenced by its traceback's
    frames for as long as the exception lives, so no collection could free it while the run is ended from its
    handler. The frames' variables are cleared (a traceback still prints: file, line and code stay), then a
    collection runs."""
    import gc
    import sys
    import traceback

    exc, seen = sys.exc_info()[1], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.__traceback__ is not None:
            traceback.clear_frames(exc.__traceback__)  # frames still running are skipped
        exc = exc.__context__
    gc.collect()


def end_active_run(status: str, tries: int = 5) -> None:
    """End MLflow's active run with ``status``. A SQLite store can answer "database is locked" here after a Ctrl-C:
    the interrupted write's session may still hold the write lock (``release_interrupted``, first thing for a KILLED
    run), and a busy machine can hold it past SQLite's wait. So: release, wait a little, try again (``tries`` times
    in all); any other error, or the last, is raised."""
    import time

    import mlflow
    from mlflow.tracking import MlflowClient

    run = mlflow.active_run()
    if status == "KILLED":  # ended from an interrupt's handler: nothing of the interrupted write may hold the store
        release_interrupted()
    for attempt in range(tries):
        try:
            if attempt == 0:
                mlflow.end_run(status=status)  # leaves the run's stack even when the store refuses the update
            else:
                MlflowClient().set_terminated(run.info.run_id, status)
            return
        except Exception as exc:
            if run is None or "database is locked" not in str(exc) or attempt == tries - 1:
                raise
            release_interrupted()
            time.sleep(0.2 * (attempt + 1))


def end_started(experiment_id: str, token: str, status: str) -> None:
    """End with ``status`` a run ``start_run`` wrote before it raised (tagged ``START_TAG: token``), and leave MLflow
    with no active run of it; nothing when it wrote none. Best effort: the store may be what failed."""
    import mlflow
    from mlflow.tracking import MlflowClient

    try:
        active = mlflow.active_run()
        if active is not None and active.data.tags.get(START_TAG) == token:
            end_active_run(status)
            return
        release_interrupted()  # the interrupted start_run's write may hold the store's lock
        client = MlflowClient()
        for run in client.search_runs([experiment_id], filter_string=f"tags.`{START_TAG}` = '{token}'"):
            client.set_terminated(run.info.run_id, status)
    except Exception:  # noqa: BLE001 - the original error is what the user must see
        pass


def run_status(exc: BaseException) -> str:
    """The MLflow status of a run that ``exc`` ended: KILLED for Ctrl-C (or SIGTERM's SystemExit; also a Ctrl-C a
    library wrapped in another error: ``retrieval/interrupts.py``), else FAILED."""
    from ragrig.retrieval import interrupts

    return "KILLED" if isinstance(exc, (KeyboardInterrupt, SystemExit)) or interrupts.seen() else "FAILED"


def start_parent(cfg: RagrigConfig, spec: SweepSpec) -> Any:
    """Open the parent run (MLflow's active run until ``finish_parent``)."""
    import mlflow

    exp = ensure_experiment(cfg)
    token = secrets.token_hex(8)  # finds this run if an interrupt lands inside start_run, after its row is written
    try:
        run = mlflow.start_run(experiment_id=exp, run_name=f"sweep: {spec.name}",
                               tags={"ragrig.sweep": spec.name, START_TAG: token, **owner_tags()})
    except BaseException as exc:  # e.g. Ctrl-C while MLflow returns from writing the run: no active run to end
        end_started(exp, token, run_status(exc))
        raise
    try:
        mlflow.log_params({"sweep.name": spec.name, "sweep.metric": spec.metric, "sweep.file": spec.path or "",
                           "sweep.configs": len(expand(spec))})
        # the base config once, here; each child run logs only its own overrides (and provenance)
        swept = {k for _, ov in expand(spec) for k in ov}
        base = safe_params({k: v for k, v in cfg.flat().items() if k not in swept})
        items = sorted(base.items())
        for i in range(0, len(items), 100):  # MLflow takes at most 100 params per call
            mlflow.log_params(dict(items[i : i + 100]))
    except BaseException as exc:  # left active, MLflow's exit hook would end it FINISHED
        end_active_run(run_status(exc))
        raise
    return run


def child_options(parent: Any, spec: SweepSpec, label: str, overrides: dict[str, Any]) -> RunOptions | None:
    """How one config's evaluation is logged under ``parent`` (None: no parent run, nothing logged)."""
    if parent is None:
        return None
    # the parent's experiment id: each child skips the experiment lookup
    return RunOptions(run_name=f"{spec.name}: {label}", tags={"ragrig.sweep": spec.name}, plots=False,
                      param_keys=sorted(overrides), experiment_id=parent.info.experiment_id,
                      parent_run_id=parent.info.run_id)


def mark_parent(run_id: str | None, status: str) -> None:
    """Set an ended parent run's status (tune's steps after the sweep: a failure there is the whole run's)."""
    if run_id:
        from mlflow.tracking import MlflowClient

        MlflowClient().set_terminated(run_id, status)


def log_failed_child(cfg: RagrigConfig, sets: list[Any], exc: BaseException, log: RunOptions) -> None:
    """The FAILED child run of a config whose evaluation failed, one per test set, with the error: the store
    shows which candidate broke, not only that the sweep did."""
    from ragrig.eval.tracking.runs import log_failure

    for ts in sets:
        log_failure(cfg, ts.name, f"{type(exc).__name__}: {exc}", log)


def finish_parent(result: SweepResult, status: str = "FINISHED") -> None:
    """Log the outcome on the active parent run, note its id on ``result``, and end it with ``status`` (also when
    logging the outcome fails)."""
    import mlflow

    try:
        best = result.best
        if best is not None:
            mlflow.log_metric(f"best.{metric_name(result.metric)}", best.metrics.get(result.metric, 0.0))
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
        end_active_run(status)
