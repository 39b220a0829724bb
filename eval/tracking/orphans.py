"""MLflow runs left RUNNING by a process that died (a SIGKILLed eval, a sweep stopped by the OOM killer): each
run ragrig opens carries its owner (host, pid, and the process's start time, so a reused pid is not taken
for the owner), and the next evaluation or sweep on the same host marks the runs whose owner is gone FAILED,
with a tag that says why. Runs from other hosts are left alone (their owners cannot be checked from here)."""

from __future__ import annotations

import logging
import os
import socket
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

HOST, PID, STARTED = "ragrig.host", "ragrig.pid", "ragrig.pid_started"
REASON = "ragrig.failed_reason"


def process_started(pid: int) -> str:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or "" unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state is field 3, starttime field 22
    return fields[19] if len(fields) > 19 else ""


@lru_cache(maxsize=1)
def owner_tags() -> dict[str, str]:
    """The tags that name this process as a run's owner."""
    pid = os.getpid()
    return {HOST: socket.gethostname(), PID: str(pid), STARTED: process_started(pid)}


def owner_alive(pid: int, started: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, whoever it is
        pass
    now = process_started(pid)
    return not (started and now and now != started)  # a reused pid is another process


def fail_orphans(client: Any, experiment_id: str) -> list[str]:
    """Mark FAILED every RUNNING run of the experiment that this host's dead processes left; their ids."""
    me = owner_tags()
    try:
        runs = client.search_runs([experiment_id], filter_string=f"attributes.status = 'RUNNING' and "
                                  f"tags.`{HOST}` = '{me[HOST]}'", max_results=1000)
    except Exception as exc:  # a store that cannot search: nothing to clean, the evaluation goes on
        log.debug("cannot look for orphaned runs: %s", exc)
        return []
    failed = []
    for run in runs:
        tags = run.data.tags
        try:
            pid = int(tags.get(PID, ""))
        except ValueError:
            continue
        if pid == os.getpid() and tags.get(STARTED, "") == me[STARTED]:
            continue  # this process's own open run (a sweep's parent)
        if owner_alive(pid, tags.get(STARTED, "")):
            continue
        client.set_tag(run.info.run_id, REASON, f"process {pid} on {me[HOST]} ended without finishing this run "
                       f"(killed?); marked FAILED by process {os.getpid()}")
        client.set_terminated(run.info.run_id, "FAILED")
        failed.append(run.info.run_id)
    if failed:
        log.warning("marked %d MLflow run(s) FAILED: left RUNNING by a process that is gone (%s)", len(failed),
                    ", ".join(failed))
    return failed
