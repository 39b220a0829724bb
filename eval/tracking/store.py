"""Where runs go: the tracking URI and artifact location (a local sqlite store and an explicit artifact folder
under the ragrig home unless the config names others: MLflow 3 refuses the plain file store), and the
experiment, created on first use."""

from __future__ import annotations

from ragrig.configs.models import RagrigConfig


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


def ensure_experiment(cfg: RagrigConfig) -> str:
    """Point MLflow at this config's store and return the id of its experiment (created when missing)."""
    import logging

    import mlflow

    logging.getLogger("mlflow").setLevel(logging.WARNING)

    mlflow.set_tracking_uri(tracking_uri(cfg))
    exp = mlflow.get_experiment_by_name(cfg.mlflow.experiment)
    if exp is None:
        return mlflow.create_experiment(cfg.mlflow.experiment, artifact_location=artifact_location(cfg))
    return exp.experiment_id
