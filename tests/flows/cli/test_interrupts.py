"""Ctrl-C that a library swallowed or wrapped is still an interrupt (retrieval/interrupts.py). Found probing
`ragrig tune` with SIGINT at different moments: during scipy.stats' import Python 3.11 wraps the KeyboardInterrupt
in "RuntimeError: Error calling __set_name__ ..." (exit 1 with that line), and a library's optional-import guard
can swallow it (the tune went on and exited 0, its parent run FINISHED)."""

from __future__ import annotations

import os
import signal

import pytest
from ragrig.eval.sweep.parent import run_status
from ragrig.flows import cli
from ragrig.flows.cli import index as index_cli
from ragrig.retrieval import interrupts


def test_an_interrupt_wrapped_in_another_error_is_exit_130_and_one_line(monkeypatch, capsys):
    def wrapped(args, cfg):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance '_alternative'") from exc

    monkeypatch.setattr(index_cli, "cmd_health", wrapped)
    assert cli.main(["health"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["interrupted"]


def test_a_plain_error_is_still_exit_1(monkeypatch, capsys):
    monkeypatch.setattr(index_cli, "cmd_health", lambda args, cfg: (_ for _ in ()).throw(RuntimeError("boom")))
    assert cli.main(["health"]) == 1
    assert "RuntimeError: boom" in capsys.readouterr().err


def test_a_swallowed_sigint_is_raised_at_the_next_check_and_the_run_is_killed():
    previous = interrupts.install()
    try:
        interrupts.check()  # nothing yet
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:  # noqa: BLE001 - what a library's guard does
            pass
        assert interrupts.seen()
        assert run_status(RuntimeError("wrapped")) == "KILLED"
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
    finally:
        interrupts.restore(previous)
    assert interrupts.install() is not None and not interrupts.seen()  # the next command starts clear
    interrupts.restore(previous)
    assert run_status(RuntimeError("a real failure")) == "FAILED"


def test_sigterm_is_an_interrupt_that_cleans_up_then_exit_143(monkeypatch, capsys):
    """SIGTERM (a scheduler's or supervisor's stop) used to end the process at once, running no clean-up: an
    adapt's scratch folder, an ingest's staging, an MLflow run left RUNNING. It now unwinds like Ctrl-C."""
    cleaned = []

    def stopped(args, cfg):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            cleaned.append(True)

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(index_cli, "cmd_health", stopped)
    assert cli.main(["health"]) == 143  # in-process (argv given): returned; the script then dies of SIGTERM
    assert cleaned == [True] and interrupts.terminated()
    assert capsys.readouterr().err.strip().splitlines() == ["terminated (SIGTERM)"]
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is the command's only
    assert run_status(KeyboardInterrupt()) == "KILLED"
