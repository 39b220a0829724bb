"""One MLflow run per evaluation: params (the flattened resolved config and the provenance), metrics (overall,
per tag, latency, variance, ragas) and tags in one batch, the test set as a dataset input (``datasets.py``), then
the artifacts (``artifacts.write_artifacts``). Runs are named after what they evaluated (``default_run_name``)
and tagged with the index key and version (``ragrig.index.key``, ``ragrig.index.version``).

The run goes through ``MlflowClient`` rather than the fluent API: it never touches MLflow's per-thread
active-run stack (so any thread may log), and it costs about half as much, which a sweep pays per config.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragrig.configs.models import RagrigConfig
from ragrig.eval.metrics import PER_TAG
from ragrig.eval.report import EvalReport
from ragrig.eval.tracking.artifacts import local_dir, per_query_rows, write_artifacts
from ragrig.eval.tracking.datasets import log_dataset
from ragrig.eval.tracking.orphans import owner_tags
from ragrig.eval.tracking.secrets import env_secrets, safe_params, scrub
from ragrig.eval.tracking.store import ensure_experiment


@dataclass(frozen=True)
class RunOptions:
    """How an evaluation is logged: ``ragrig eval`` names the run; a sweep's children hang under the sweep's
    parent run, skip the plots and log only their own overrides.

    ``plots=False`` also skips the per-query MLflow table (report.json and per_query.csv still hold every
    row). ``param_keys`` logs only those config params plus the provenance (the parent run holds the base
    config, config.yaml the whole one). ``experiment_id``: the parent's, which also sets the tracking URI.
    ``parent_run_id`` (or ``nested=True``: the active run) nests the run under that one."""

    run_name: str | None = None
    tags: dict[str, str] | None = None
    plots: bool = True
    param_keys: list[str] | None = None
    experiment_id: str | None = None
    parent_run_id: str | None = None
    nested: bool = False


@lru_cache(maxsize=1)
def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).resolve().parent).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def metric_name(key: str) -> str:
    """MLflow metric names allow [\\w./ -]: '@' becomes '_at_'."""
    return re.sub(r"[^\w./ -]", "_", key.replace("@", "_at_"))


@lru_cache(maxsize=1)
def _context_tags() -> dict[str, str]:
    """What MLflow's fluent ``start_run`` resolves for every run (user, source, git commit), once per process:
    it does not change within one, and resolving it is most of ``start_run``'s cost (~8 ms a run)."""
    try:
        from mlflow.tracking.context.registry import resolve_tags

        return {k: str(v) for k, v in resolve_tags().items()}
    except Exception:  # an internal API: a run without these tags is still a whole run
        return {}


def run_metrics(report: EvalReport) -> dict[str, float]:
    """Every metric of a run, under MLflow-safe names."""
    metrics = {metric_name(k): v for k, v in report.overall.items()}
    for tag, vals in report.per_tag.items():
        for k in PER_TAG:
            if k in vals:
                metrics[metric_name(f"tag.{tag}.{k}")] = vals[k]
    for k, v in report.latency_ms.items():
        metrics[f"latency_ms.{k}"] = v
    for k, v in report.variance.items():
        metrics[metric_name(k)] = v
    for k, v in report.ragas.items():
        metrics[metric_name(f"ragas.{k}")] = v
    for scope, gains in report.hop_gains.items():  # per-hop recall gain: hops.1.recall_gain_at_10, per tag too
        prefix = "" if scope == "overall" else f"tag.{scope}."
        for hop, g in gains.items():
            metrics[metric_name(f"{prefix}hops.{hop}.recall_gain@10")] = g
    if report.testset_check is not None:  # the stale-case check the evaluation ran after
        for status, n in report.testset_check["counts"].items():
            metrics[f"testset_check.{status}"] = float(n)
    return metrics


def default_run_name(report: EvalReport) -> str:
    """What a run is called unless ``--run-name`` says: the test set, the index and its version (and the sweep
    label), e.g. ``sample-rules on sample-8b64625bd4@v000003``, rather than MLflow's random two words."""
    label = f" [{report.label}]" if report.label else ""
    return f"{report.testset} on {report.index_key}@{report.index_version}{label}"


def log_report(cfg: RagrigConfig, report: EvalReport, options: RunOptions | None = None) -> str:
    """One MLflow run for one evaluation, logged as ``options`` say; returns the run id. Params, metrics and
    tags go in one batch. A run whose logging fails is marked FAILED, as ``with mlflow.start_run()`` would."""
    import mlflow
    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.tracking import MlflowClient

    o = options or RunOptions()
    exp_id = o.experiment_id or ensure_experiment(cfg)
    parent_run_id = o.parent_run_id
    active = mlflow.active_run() if parent_run_id is None and o.nested else None
    if active is not None:
        parent_run_id = active.info.run_id
    secrets = env_secrets()
    # provenance goes through the same scrubbing: the index key embeds index.name / the corpus folder name
    flat = cfg.flat()
    if o.param_keys is not None:
        flat = {k: flat[k] for k in o.param_keys if k in flat}
    params = safe_params({
        **flat,
        "index.version": report.index_version,
        "index.key": report.index_key,
        "embedding.model_id": report.model_id,
        "index.vector_search.used": report.vector_search,  # what answered (the config's mode may say auto)
        "testset.name": report.testset,
        "testset.sha256": report.testset_sha256 or "",
        "git.commit": git_commit(),
    })
    run_tags = {k: scrub(str(v), secrets) for k, v in {
        "ragrig.testset": report.testset, "ragrig.index": f"{report.index_key}@{report.index_version}",
        "ragrig.index.key": report.index_key, "ragrig.index.version": report.index_version,
        **({"ragrig.machine": report.machine} if report.machine else {}), **(o.tags or {})
    }.items()}
    if parent_run_id is not None:
        run_tags["mlflow.parentRunId"] = parent_run_id
    metrics = run_metrics(report)

    client = MlflowClient()
    run_name = scrub(o.run_name or default_run_name(report), secrets)
    run = client.create_run(exp_id, run_name=run_name, tags={**_context_tags(), **owner_tags(), **run_tags})
    run_id = run.info.run_id
    try:
        log_dataset(client, run_id, report)  # the test set, as mlflow.log_input would
        stamp = int(time.time() * 1000)
        plist = [Param(k, v) for k, v in params.items()]
        client.log_batch(  # MLflow takes at most 100 params per batch
            run_id, metrics=[Metric(k, float(v), stamp, 0) for k, v in metrics.items()], params=plist[:100])
        for i in range(100, len(plist), 100):
            client.log_batch(run_id, params=plist[i : i + 100])
        local = local_dir(run.info.artifact_uri)
        if local is not None:  # a local store: write the files in place rather than write, then copy
            local.mkdir(parents=True, exist_ok=True)
            write_artifacts(local, cfg, report, secrets, o.plots)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                write_artifacts(Path(tmp), cfg, report, secrets, o.plots)
                client.log_artifacts(run_id, tmp)
        if o.plots:  # the per-query table in MLflow's UI (sweep children skip it: report.json holds every row)
            import pandas as pd

            client.log_table(run_id, pd.DataFrame(per_query_rows(report, secrets)), artifact_file="per_query.json")
    except BaseException:
        client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        raise
    client.set_terminated(run_id)
    return run_id



def log_failure(cfg: RagrigConfig, testset: str, error: str, options: RunOptions | None = None) -> str:
    """A FAILED MLflow run for an evaluation that could not finish (its index removed under it, a damaged
    version): the config, the test set and the error, so the store says what happened; returns the run id."""
    from mlflow.entities import Param, RunStatus
    from mlflow.tracking import MlflowClient

    o = options or RunOptions()
    exp_id = o.experiment_id or ensure_experiment(cfg)
    secrets = env_secrets()
    flat = cfg.flat()
    if o.param_keys is not None:
        flat = {k: flat[k] for k in o.param_keys if k in flat}
    params = safe_params({**flat, "testset.name": testset, "git.commit": git_commit()})
    tags = {"ragrig.testset": testset, "ragrig.error": scrub(error, secrets)[:4000], **(o.tags or {})}
    if o.parent_run_id is not None:
        tags["mlflow.parentRunId"] = o.parent_run_id
    client = MlflowClient()
    run = client.create_run(exp_id, run_name=o.run_name, tags={**_context_tags(), **owner_tags(), **tags})
    try:
        plist = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(plist), 100):
            client.log_batch(run.info.run_id, params=plist[i : i + 100])
    finally:
        client.set_terminated(run.info.run_id, RunStatus.to_string(RunStatus.FAILED))
    return run.info.run_id
def attach(cfg: RagrigConfig, run_id: str, texts: dict[str, str], metrics: dict[str, float] | None = None,
           tags: dict[str, str] | None = None) -> None:
    """Add files (name -> text), metrics and tags to a logged run: what the publish-triggered evaluation learns
    after the run is logged (the diff against the version before, the gate's verdict). Texts are scrubbed."""
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    ensure_experiment(cfg)  # sets the tracking URI this config logs to
    secrets = env_secrets()
    client = MlflowClient()
    stamp = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(metric_name(k), float(v), stamp, 0) for k, v in (metrics or {}).items()],
                     tags=[RunTag(k, scrub(str(v), secrets)) for k, v in (tags or {}).items()])
    for name, text in texts.items():
        client.log_text(run_id, scrub(text, secrets), name)

