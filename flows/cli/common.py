"""What every command shares: the --config/--set flags, the offline/quiet library environment, Prefect's home,
and writing output files (--output-json, --markdown, --junit, baselines) atomically."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ragrig.configs.errors import InputError, RagrigError
from ragrig.configs.models import RagrigConfig


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="a YAML config layered over the embedded defaults")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override one config value (repeatable), e.g. --set retrieval.fusion.rrf_k=40")


def add_runner(p: argparse.ArgumentParser) -> None:
    """--runner/--workers/--address: shortcuts for flow.runner/workers/address (config overrides, so reports and
    MLflow record them); --address alone implies --runner dask."""
    g = p.add_argument_group("where the work runs (flow.runner, flow.workers, flow.address)")
    g.add_argument("--runner", choices=["local", "dask"], default=None,
                   help="local: this process; dask: a LocalCluster of --workers processes, or the cluster at --address")
    g.add_argument("--workers", type=int, default=None, metavar="N", help="threads (local) or worker processes (dask)")
    g.add_argument("--address", default=None, metavar="tcp://HOST:PORT", help="join the Dask cluster at this scheduler")


def runner_overrides(args: argparse.Namespace) -> list[str]:
    """The --set items the runner shortcuts stand for (none for a command without them)."""
    runner = getattr(args, "runner", None) or ("dask" if getattr(args, "address", None) else None)
    out = [f"flow.runner={runner}"] if runner else []
    if getattr(args, "workers", None) is not None:
        out.append(f"flow.workers={args.workers}")
    if getattr(args, "address", None):
        out.append(f"flow.address={args.address}")
    return out


def quiet_env(cfg: RagrigConfig) -> None:
    """Offline, quiet defaults for the libraries we drive (never overriding what the user set)."""
    from ragrig.flows.environment import QUIET_ENV

    defaults = {**QUIET_ENV, "PREFECT_HOME": str(cfg.home_dir / "prefect")}
    from ragrig.retrieval.encoders.catalog import is_local

    if is_local(cfg.embedding.model):
        defaults["HF_HUB_OFFLINE"] = "1"  # a local model never needs the hub
    for k, v in defaults.items():
        os.environ.setdefault(k, v)
    import logging

    for name in ("mlflow", "alembic", "httpx", "bm25s", "docling", "chromadb", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)


def prefect_home() -> None:
    """Prefect needs its home to exist when it is first imported; created only when a flow is about to run, so
    a command that fails validation writes nothing. Then Prefect's temporary server is started, set to die with
    this process (``flows/prefect_server.py``)."""
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    from ragrig.flows.prefect_server import start_ephemeral_server

    start_ephemeral_server()  # Prefect's temporary API server, dying with this process (even SIGKILLed)


OUTPUTS = {"output_json": "--output-json", "markdown": "--markdown", "junit": "--junit", "write": "--write",
           "output": "--output"}
"""Every command's output-file options (argparse dest: flag), checked by ``check_outputs`` before any work."""


def check_output(path: str | Path, flag: str) -> None:
    """One line, exit 2, when ``path`` cannot be written (a folder, an unwritable or non-folder parent)."""
    from ragrig.retrieval.atomic import unwritable

    problem = unwritable(Path(path))
    if problem:
        raise InputError(f"{flag} {path}: {problem}")


def check_home(home: Path) -> None:
    """The home (``home:`` or $RAGRIG_HOME) is a folder, or can become one: a file there (or on the way) is one
    line, not a NotADirectoryError from whichever command touched it first."""
    from ragrig.retrieval.atomic import nearest_existing

    folder = nearest_existing(home)  # not folder_problem: a read-only home serves queries
    if not folder.is_dir():
        raise InputError(f"home {home}: {folder} is not a folder (set home: or $RAGRIG_HOME to a folder)")


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path a command was given (``OUTPUTS``; gate's ``--baseline`` with ``--update-baseline``),
    checked before the command does any work: a tune or sweep never runs to the end and then fails to write."""
    for dest, flag in OUTPUTS.items():
        value = getattr(args, dest, None)
        if isinstance(value, str) and value:  # `testset check --write` is a switch, not a path
            check_output(value, flag)
    if getattr(args, "update_baseline", False):
        check_output(args.baseline, "--baseline")


def write_text(path: str | None, text: str) -> None:
    """Write an output file whole or not at all (temp file, fsync, rename): a full disk leaves the previous
    file as it was and is one clear error, never a file cut short."""
    if not path:
        return
    from ragrig.retrieval.index.files import write_atomic

    try:
        write_atomic(Path(path), text.encode("utf-8"))
    except OSError as exc:
        raise RagrigError(f"cannot write {path}: {exc.strerror or exc}; the file is unchanged") from None


def write_json(path: str | None, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
