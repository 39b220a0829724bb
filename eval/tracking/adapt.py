"""The MLflow run of one ``ragrig adapt``: params (the recipe, the pair counts, the base model, the output
folder), the loss per step as a metric history (``loss`` at step 1..n), the totals, and tags naming the base
model and the corpus version it learned from. Through ``MlflowClient`` like every run (``runs.py``)."""

from __future__ import annotations

import time
from typing import Any

from ragrig.configs.models import RagrigConfig
from ragrig.eval.tracking.orphans import owner_tags
from ragrig.eval.tracking.runs import git_commit
from ragrig.eval.tracking.secrets import env_secrets, safe_params, scrub
from ragrig.eval.tracking.store import ensure_experiment

TAG_BASE = "ragrig.adapt.base_model"
TAG_CORPUS = "ragrig.adapt.corpus_version"


def log_adapt(cfg: RagrigConfig, result: dict[str, Any]) -> str:
    """One run for an adapt result (``AdaptResult.to_dict()``); its id."""
    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.tracking import MlflowClient

    exp_id = ensure_experiment(cfg)
    secrets = env_secrets()
    params = safe_params({
        **{f"adapt.{k}": v for k, v in result["recipe"].items()},
        **{f"adapt.pairs.{k}": n for k, n in result["pair_counts"].items()},
        "adapt.pairs.total": result["pairs"], "adapt.recipe_hash": result["recipe_hash"],
        "adapt.device": result["device"], "adapt.reused": result["reused"], "adapt.output": result["model"],
        "embedding.model": cfg.embedding.model, "embedding.model_id": result["base_model"],
        "index.key": result["index_key"], "index.version": result["version"], "git.commit": git_commit(),
    })
    corpus = f"{result['index_key']}@{result['version']}"
    tags = {TAG_BASE: scrub(result["base_model"], secrets), TAG_CORPUS: corpus, "ragrig.index.key": result["index_key"],
            "ragrig.index.version": result["version"], "ragrig.command": "adapt"}
    client = MlflowClient()
    run = client.create_run(exp_id, run_name=f"adapt {corpus}", tags={**owner_tags(), **tags})
    run_id = run.info.run_id
    try:
        stamp = int(time.time() * 1000)
        metrics = [Metric("loss", float(v), stamp, i + 1) for i, v in enumerate(result["losses"])]
        for name in ("steps", "pairs", "seconds", "train_seconds", "pairs_per_s"):
            metrics.append(Metric(f"adapt.{name}", float(result[name]), stamp, 0))
        plist = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(plist), 100):  # MLflow's limits per batch: 100 params, 1000 metrics
            client.log_batch(run_id, params=plist[i:i + 100])
        for i in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[i:i + 1000])
    except BaseException:
        client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        raise
    client.set_terminated(run_id)
    return run_id
