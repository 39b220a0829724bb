"""The offline, quiet settings for the libraries ragrig drives, in one place (the CLI sets them as defaults;
the tests set them before anything imports Prefect or huggingface_hub)."""

from __future__ import annotations

QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_LOGGING_TO_API_BATCH_INTERVAL": "0.3",
    # the ephemeral API server a flow starts waits 20 s by default: a busy 2-core machine missed that ("Timed out
    # while attempting to connect to ephemeral Prefect API server") and `ragrig ingest` failed before any work
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    "RAGAS_DO_NOT_TRACK": "true",
    "DO_NOT_TRACK": "1",
}
