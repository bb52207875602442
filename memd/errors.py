"""One exception hierarchy. Only the CLI turns these into messages and exit codes."""

from __future__ import annotations


class MemdError(Exception):
    """Base class for every error memd raises on purpose."""

    exit_code = 1


class UserError(MemdError):
    """Bad input from the user: empty text, unknown kind, unknown id, bad flag."""


class ConfigError(MemdError):
    """The config file or an environment variable is unreadable or invalid."""


class NotFound(UserError):
    """A memory id (or prefix) that matches nothing."""


class StoreError(MemdError):
    """The store could not be opened, read or written."""

    exit_code = 3


class ModelMismatch(StoreError):
    """The table holds vectors from another embedding model: run `memd reindex`."""


class SchemaTooNew(StoreError):
    """The store or state DB was written by a newer memd: refused, and never rewritten.

    Its own exit code, so that a service manager does not restart the daemon into the same
    refusal (the systemd unit says ``RestartPreventExitStatus=4``)."""

    exit_code = 4


class LockedError(MemdError):
    """Another process holds the writer lock (usually a running daemon)."""

    exit_code = 3


class ServerError(MemdError):
    """The socket cannot be set up (another daemon listens there, or the path is unusable)."""

    exit_code = 3


class DaemonUnavailable(MemdError):
    """The daemon is not running (nothing, or not a daemon, answers at its socket)."""


class DaemonNoReply(MemdError):
    """The daemon took the request but its reply did not come (timeout or a dropped
    connection): it may still be working on it, so the request is never redone elsewhere."""


class ExtractionError(MemdError):
    """An extractor backend failed; the segment stays pending for a retry."""


class BudgetExceeded(ExtractionError):
    """The daily LLM token budget is spent; memd falls back to the heuristic extractor."""
