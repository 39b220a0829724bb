"""Log an evaluation to MLflow: params (flattened resolved config, provenance), metrics, artifacts.

Defaults to a local sqlite store under the ragrig home with an explicit artifact location
(MLflow 3 refuses the plain file store). Secrets never reach MLflow: params whose key looks
like a credential are dropped, and values equal to a secret from the environment are masked.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.eval.evaluate import EvalReport

SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential)", re.I)


def tracking_uri(cfg: RagrigConfig) -> str:
    if cfg.mlflow.tracking_uri:
        return cfg.mlflow.tracking_uri
    d = cfg.home_dir / "mlflow"
    d.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{d / 'mlflow.db'}"


def artifact_location(cfg: RagrigConfig) -> str:
    if cfg.mlflow.artifact_location:
        return cfg.mlflow.artifact_location
    d = cfg.home_dir / "mlflow" / "artifacts"
    d.mkdir(parents=True, exist_ok=True)
    return d.as_uri()


def _env_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if SECRET_KEY.search(k) and v and len(v) >= 6]


def scrub(value: str, secrets: list[str] | None = None) -> str:
    for s in secrets if secrets is not None else _env_secrets():
        value = value.replace(s, "***")
    return value


def safe_params(flat: dict[str, Any]) -> dict[str, str]:
    secrets = _env_secrets()
    out = {}
    for k, v in flat.items():
        if SECRET_KEY.search(k):
            continue
        out[k] = scrub(str(v), secrets)[:6000]
    return out


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


def ensure_experiment(cfg: RagrigConfig) -> str:
    import logging

    import mlflow

    logging.getLogger("mlflow").setLevel(logging.WARNING)

    mlflow.set_tracking_uri(tracking_uri(cfg))
    exp = mlflow.get_experiment_by_name(cfg.mlflow.experiment)
    if exp is None:
        return mlflow.create_experiment(cfg.mlflow.experiment, artifact_location=artifact_location(cfg))
    return exp.experiment_id


@lru_cache(maxsize=1)
def _context_tags() -> dict[str, str]:
    """What MLflow's fluent ``start_run`` resolves for every run (user, source, git commit), once per process:
    it does not change within one, and resolving it is most of ``start_run``'s cost (~8 ms a run)."""
    try:
        from mlflow.tracking.context.registry import resolve_tags

        return {k: str(v) for k, v in resolve_tags().items()}
    except Exception:  # an internal API: a run without these tags is still a whole run
        return {}


def _local_dir(artifact_uri: str) -> Path | None:
    """The folder behind a local artifact URI (file:// or a plain path), else None (a remote store)."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(url2pathname(parsed.path))
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return Path(artifact_uri)
    return None


def log_report(cfg: RagrigConfig, report: EvalReport, run_name: str | None = None, nested: bool = False,
               tags: dict[str, str] | None = None, plots: bool = True, param_keys: list[str] | None = None,
               experiment_id: str | None = None, parent_run_id: str | None = None) -> str:
    """One MLflow run for one evaluation; returns the run id. Params, metrics and tags go in one batch.
    ``plots=False`` (sweep children; the parent has the sweep's plots) also skips the per-query MLflow table:
    report.json and per_query.csv still hold every row. ``param_keys`` (sweep children) logs only those
    config params plus the provenance; the parent run holds the base config and config.yaml the whole one.
    ``experiment_id``: the parent's (sweep children), which also set the tracking URI; ``parent_run_id``
    (or ``nested=True``: the active run) nests the run under that one.

    The run goes through ``MlflowClient`` rather than the fluent API: it never touches MLflow's per-thread
    active-run stack (so any thread may log), and it costs about half as much, which a sweep pays per config.
    A run whose logging fails is marked FAILED, as ``with mlflow.start_run()`` would."""
    import mlflow
    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.tracking import MlflowClient

    exp_id = experiment_id or ensure_experiment(cfg)
    active = mlflow.active_run() if parent_run_id is None and nested else None
    if active is not None:
        parent_run_id = active.info.run_id
    secrets = _env_secrets()
    # provenance goes through the same scrubbing: the index key embeds index.name / the corpus folder name
    flat = cfg.flat()
    if param_keys is not None:
        flat = {k: flat[k] for k in param_keys if k in flat}
    params = safe_params({
        **flat,
        "index.version": report.index_version,
        "index.key": report.index_key,
        "embedding.model_id": report.model_id,
        "testset.name": report.testset,
        "testset.sha256": report.testset_sha256 or "",
        "git.commit": git_commit(),
    })
    run_tags = {k: scrub(str(v), secrets) for k, v in {
        "ragrig.testset": report.testset, "ragrig.index": f"{report.index_key}@{report.index_version}", **(tags or {})
    }.items()}
    if parent_run_id is not None:
        run_tags["mlflow.parentRunId"] = parent_run_id
    metrics = {metric_name(k): v for k, v in report.overall.items()}
    for tag, vals in report.per_tag.items():
        for k in ("ndcg@10", "recall@10", "mrr@10", "hit_rate@5"):
            if k in vals:
                metrics[metric_name(f"tag.{tag}.{k}")] = vals[k]
    for k, v in report.latency_ms.items():
        metrics[f"latency_ms.{k}"] = v
    for k, v in report.variance.items():
        metrics[metric_name(k)] = v
    for k, v in report.ragas.items():
        metrics[metric_name(f"ragas.{k}")] = v

    client = MlflowClient()
    run = client.create_run(exp_id, run_name=run_name, tags={**_context_tags(), **run_tags})
    run_id = run.info.run_id
    try:
        stamp = int(time.time() * 1000)
        plist = [Param(k, v) for k, v in params.items()]
        client.log_batch(  # MLflow takes at most 100 params per batch
            run_id, metrics=[Metric(k, float(v), stamp, 0) for k, v in metrics.items()], params=plist[:100])
        for i in range(100, len(plist), 100):
            client.log_batch(run_id, params=plist[i : i + 100])
        local = _local_dir(run.info.artifact_uri)
        if local is not None:  # a local store: write the files in place rather than write, then copy
            local.mkdir(parents=True, exist_ok=True)
            _write_artifacts(local, cfg, report, secrets, plots)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                _write_artifacts(Path(tmp), cfg, report, secrets, plots)
                client.log_artifacts(run_id, tmp)
        if plots:  # the per-query table in MLflow's UI (sweep children skip it: report.json holds every row)
            import pandas as pd

            client.log_table(run_id, pd.DataFrame(_per_query_rows(report, secrets)), artifact_file="per_query.json")
    except BaseException:
        client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        raise
    client.set_terminated(run_id)
    return run_id


PER_QUERY_COLUMNS = ("id", "query", "tags", "ndcg@10", "recall@10", "mrr@10", "precision@5", "latency_ms", "missed@10")


def _per_query_rows(report: EvalReport, secrets: list[str]) -> list[dict[str, Any]]:
    return [{"id": r["id"], "query": scrub(r["query"], secrets), "tags": ",".join(r["tags"]),
             **{k: r["metrics"][k] for k in ("ndcg@10", "recall@10", "mrr@10", "precision@5")},
             "latency_ms": r["latency_ms"], "missed@10": "; ".join(r["missed@10"])}
            for r in report.per_query]


def _write_artifacts(t: Path, cfg: RagrigConfig, report: EvalReport, secrets: list[str], plots: bool) -> None:
    """per_query.csv, config.yaml, report.json, failed_cases.md (and the two plots) into folder ``t``."""
    import csv

    from ragrig.eval.plots import per_tag_png, recall_ndcg_png

    with (t / "per_query.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=PER_QUERY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_per_query_rows(report, secrets))
    (t / "config.yaml").write_text(scrub(cfg.to_yaml(), secrets), encoding="utf-8")
    # the whole report, so `ragrig compare` and `ragrig gate` can take an MLflow run as input (not ASCII-escaped:
    # a secret with non-ASCII characters must appear as itself for scrub to find it)
    (t / "report.json").write_text(scrub(json.dumps(report.to_dict(), ensure_ascii=False), secrets), encoding="utf-8")
    failed = [r for r in report.per_query if r["missed@10"]]
    buf = io.StringIO()
    for r in failed:
        buf.write(f"## {r['id']}: {r['query']}\nmissed@10: {', '.join(r['missed@10'])}\n")
        for h in r["top"][:5]:
            buf.write(f"  {h['rank']}. {'*' if h['relevant'] else ' '} {h['header']} ({h['chunk_id']})\n")
        buf.write("\n")
    (t / "failed_cases.md").write_text(scrub(buf.getvalue(), secrets) or "no failed cases\n", encoding="utf-8")
    if plots:  # sweep children skip them: the parent run has the sweep's plots
        recall_ndcg_png(report, t / "recall_ndcg_at_k.png")
        per_tag_png(report, t / "per_tag.png")
