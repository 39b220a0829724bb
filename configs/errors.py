"""The error types every layer shares, and the exit code each one maps to."""

from __future__ import annotations


class RagrigError(Exception):
    """Base class: something the user can act on, with a message that says what."""

    exit_code = 1


class InputError(RagrigError):
    """Bad input: a config, a test set, an argument, a corpus path. CLI exit code 2."""

    exit_code = 2


class IndexNotFoundError(InputError):
    """No published index for the config: run `ragrig ingest` first."""


class ModelMismatchError(InputError):
    """The index was built with another embedding model than the config asks for."""


class LockedError(RagrigError):
    """Another ingest holds the index lock."""

    exit_code = 3


class IndexDamagedError(RagrigError):
    """A published index version whose files do not match its manifest (or are missing): `ragrig ingest`
    rebuilds it."""
