"""Run a command through the daemon when it runs, else in-process under the writer lock.

A CLI command that the daemon answers should cost little more than the interpreter's start:
:class:`Target` finds the daemon's socket without building ``Settings`` (pydantic and
pydantic-settings take ~150 ms to import), by the same rule (``memd.hook.locate``, tested against
``Settings``). The full ``Settings`` are built only when the command runs in this process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memd import protocol
from memd.errors import DaemonUnavailable, MemdError

if TYPE_CHECKING:
    from memd.settings import Settings


class Target:
    """Where a CLI command goes: ``--home``/``--config`` flags, the environment, the config file."""

    def __init__(self, home: str | None = None, config: str | None = None) -> None:
        self.home = home
        self.config = config
        self._socket: str | None = None
        self._settings: Settings | None = None

    @property
    def socket_path(self) -> str:
        if self._socket is None:
            if self._settings is not None:
                self._socket = str(self._settings.socket_path)
            else:
                from memd.hook import locate

                found = locate(os.environ.get, home=self.home or "", config=self.config or "")[0]
                self._socket = os.path.normpath(found)
        return self._socket

    def settings(self) -> Settings:
        """The full, validated settings (a bad config file raises ConfigError here)."""
        if self._settings is None:
            from memd.settings import load_settings

            self._settings = load_settings(home=self.home, config=self.config)
        return self._settings


def settings_of(where: Settings | Target) -> Settings:
    return where.settings() if isinstance(where, Target) else where


def daemon_request(
    settings: Settings | Target, cmd: str, timeout: float | None = 600.0, **args: Any
) -> dict[str, Any]:
    """One request to the running daemon. Raises DaemonUnavailable when nobody answers."""
    path = str(settings.socket_path)
    try:
        reply = protocol.request(path, {"cmd": cmd, **args}, timeout=timeout)
    except protocol.NoReply as exc:
        # It has the request and may still be working on it: never redo it locally.
        raise MemdError(f"{exc} (see `memd status`)") from exc
    except (OSError, ValueError) as exc:
        raise DaemonUnavailable(f"the daemon at {path} is not reachable: {exc}") from exc
    if not reply.get("ok"):
        raise MemdError(str(reply.get("error") or "the daemon refused the request"))
    return reply


def run(
    where: Settings | Target,
    cmd: str,
    *,
    writer: bool,
    timeout: float | None = 600.0,
    progress: Callable[[dict[str, Any]], None] | None = None,
    **args: Any,
) -> dict[str, Any]:
    """``cmd`` is a socket command of ``App`` (:data:`memd.daemon.commands.APP_COMMANDS`): through the
    daemon when it runs, else the same ``App`` method in this process. ``progress`` reaches only
    an in-process run (the socket does not stream)."""
    try:
        return daemon_request(where, cmd, timeout=timeout, **args)
    except DaemonUnavailable:
        pass
    from memd.daemon.app import App
    from memd.daemon.commands import APP_COMMANDS

    command = APP_COMMANDS[cmd]
    if progress is not None:
        args["progress"] = progress
    app = App(settings_of(where))
    if command.store:
        app.open(writer=writer)
    try:
        return {"ok": True, **getattr(app, command.method)(**args)}
    finally:
        app.close()
