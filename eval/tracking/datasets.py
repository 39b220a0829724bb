"""The test set as an MLflow dataset input: what ``mlflow.log_input(dataset, context="eval")`` logs, built for
``MlflowClient.log_inputs`` (runs.py logs through the client). MLflow's UI then shows the test set in the runs
table's "Datasets" column and on the run page, with its digest, source, schema and row count.

The dataset is the test set's cases (id, query, tags, expected sections), one row each; its digest is the first
16 hex digits of the test set file's sha256 (the full hash is the run's ``testset.sha256`` param), so two runs
on the same file show the same digest and an edited file a new one.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragrig.eval.report import EvalReport

if TYPE_CHECKING:
    from mlflow.entities import DatasetInput

CONTEXT = "eval"
DIGEST_CHARS = 16  # MLflow keeps up to 36 characters of a digest


def testset_rows(report: EvalReport) -> list[dict[str, Any]]:
    """One row per case: the test set as the evaluation read it."""
    return [{"id": r["id"], "query": r["query"], "tags": ", ".join(r.get("tags", [])),
             "expected": "; ".join(r.get("expected", []))} for r in report.per_query]


def dataset_input(report: EvalReport) -> DatasetInput:
    """The report's test set as a ``DatasetInput`` with the ``mlflow.data.context`` tag ``eval`` (built once per
    test set file and digest: a sweep logs the same one for every config)."""
    digest = (report.testset_sha256 or "")[:DIGEST_CHARS]
    return _cached(report.testset, report.testset_path or "", digest, tuple(map(_frozen, testset_rows(report))))


def _frozen(row: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(row.items())


@lru_cache(maxsize=16)
def _cached(name: str, source: str, digest: str, rows: tuple[tuple[tuple[str, Any], ...], ...]) -> DatasetInput:
    import mlflow.data
    import pandas as pd
    from mlflow.data.dataset_source_registry import get_dataset_source_from_json
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    df = pd.DataFrame([dict(r) for r in rows], columns=["id", "query", "tags", "expected"])
    # a local file: named as "local" outright (resolving the path finds two equal candidates and warns)
    src = None
    if source:
        src = get_dataset_source_from_json(json.dumps({"uri": Path(source).resolve().as_uri()}), "local")
    ds = mlflow.data.from_pandas(df, source=src, name=name, digest=digest or None)
    return DatasetInput(dataset=ds._to_mlflow_entity(), tags=[InputTag(key=MLFLOW_DATASET_CONTEXT, value=CONTEXT)])


def log_dataset(client: Any, run_id: str, report: EvalReport, tries: int = 3) -> None:
    """``client.log_inputs`` of the report's test set. MLflow's store makes a dataset's row on first use (one per
    experiment, name and digest) without a lock: two runs logging the same test set at once (a sweep's candidates
    on a cluster's workers) can both insert it, and the second gets a unique-constraint error, its whole write
    rolled back. The row is there then, so the next try only links it. Any other error is raised at once."""
    import time

    for attempt in range(tries):
        try:
            client.log_inputs(run_id, datasets=[dataset_input(report)])
            return
        except Exception as exc:
            text = str(exc)
            raced = "datasets" in text and ("UNIQUE constraint failed" in text or "duplicate key value" in text)
            if not raced or attempt == tries - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
