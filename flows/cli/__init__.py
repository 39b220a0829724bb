"""The ``ragrig`` command line. Exit codes: 0 ok, 1 run/gate failed, 2 bad input, 3 locked.

One module per command group (``ingest``, ``query``, ``serve``, ``evaluate``: eval and run, ``compare``: compare
and gate, ``sweep``, ``tune``, ``adapt``, ``index``: health, validate and reset, ``testsets``: import-beir and testset check/draft,
``diff``: two index versions); each registers its
subcommands. Every command takes ``--config FILE`` and ``--set key.path=value``; ``main`` loads the config
once and hands it to the command. Heavy imports (Prefect, torch, Chroma) happen after the config is
validated, so bad input fails fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from ragrig.configs.errors import RagrigError
from ragrig.configs.load import load_config
from ragrig.flows.cli import adapt, compare, diff, evaluate, index, ingest, query, serve, sweep, testsets, tune
from ragrig.flows.cli.common import check_home, check_outputs, quiet_env, runner_overrides
from ragrig.retrieval import interrupts

GROUPS = (ingest, query, serve, evaluate, compare, sweep, tune, adapt, index, testsets, diff)  # the order of `ragrig --help`


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as every other user mistake: one line on stderr, exit 2 (argparse prints the usage
    block first: 5-6 lines for `-k 1.5`); the usage is one `--help` away, and the line says so."""

    def error(self, message: str) -> NoReturn:
        from ragrig.flows.render.console import visible

        self.exit(2, visible(f"error: {self.prog}: {message} (see {self.prog} --help)") + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ragrig", description="Ingest, retrieve and evaluate RAG retrieval.")
    parser.add_argument("--log-json", action="store_true", help="structured logs: one JSON object per line on stderr")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="INFO: per-stage timings and counts; DEBUG: also per-query candidates and timings")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; ``argv`` None: the process's own command line (the ``ragrig`` script, ``python -m
    ragrig``), where a command that writes nothing (``query``) ends the process as soon as its output is out,
    without the interpreter's teardown of torch and the libraries it loaded (~1 s on a quiet machine)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    code = _run(args)
    if argv is None and interrupts.terminated():
        _die_of_sigterm()
    if argv is None and getattr(args, "quick_exit", False):
        _quick_exit(code)
    return code


def _die_of_sigterm() -> None:
    """After SIGTERM's clean-up (``retrieval/interrupts.py``), end as the signal would have: a supervisor reads
    "killed by SIGTERM", not an exit code of ragrig's."""
    import os
    import signal

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _quick_exit(code: int) -> None:
    """Flush what was written, then end the process without tearing the interpreter down (no atexit hooks: a
    command that asks for this holds nothing that needs one; its reader lease is a lock the OS drops)."""
    import logging
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more can be written anyway
            pass
    logging.shutdown()
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    from ragrig.flows.logs import configure

    configure(json_logs=args.log_json, level=args.log_level)
    previous = interrupts.install()
    try:
        args.overrides = [*args.overrides, *runner_overrides(args)]  # --runner & co. are config overrides
        cfg = load_config(args.config, args.overrides)
        check_outputs(args)  # every output path, before any work
        from ragrig.retrieval.search.query import load_synonyms

        load_synonyms(cfg.retrieval.synonyms)  # a bad synonyms file fails every command up front
        check_home(cfg.home_dir)  # so does a home that is a file (every command reads or writes under it)
        quiet_env(cfg)
        return int(args.func(args, cfg))
    except RagrigError as exc:  # bad input (2), a failed run (1), locked (3): one line, the traceback on DEBUG
        return _fail(f"error: {exc}", exc.exit_code, args.log_level)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as exc:  # a run that failed for another reason (a library, the machine): exit 1
        if interrupts.seen() or _from_interrupt(exc):  # Ctrl-C, wrapped by Python or a library on its way up
            return _interrupted()
        first = (str(exc).strip().splitlines() or [""])[0]
        hint = "" if args.log_level == "DEBUG" else " (--log-level DEBUG shows the traceback)"
        return _fail(f"error: {type(exc).__name__}: {first}{hint}", 1, args.log_level)
    finally:
        interrupts.restore(previous)


def _interrupted() -> int:
    if interrupts.terminated():
        print("terminated (SIGTERM)", file=sys.stderr)
        return 143
    print("interrupted", file=sys.stderr)
    return 130


def _from_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the causes of ``exc`` (Python 3.11 wraps one raised in a class body's
    ``__set_name__`` in a RuntimeError)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _fail(line: str, code: int, level: str) -> int:
    if level == "DEBUG":
        import traceback

        traceback.print_exc()
    from ragrig.flows.render.console import visible

    print(visible(line), file=sys.stderr)  # a path, value or answer in the message is shown, never obeyed
    return code


__all__ = ["build_parser", "main"]
