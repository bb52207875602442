"""Run a command through the daemon when it runs, else in-process under the writer lock."""

from __future__ import annotations

from typing import Any

from memd import protocol
from memd.errors import DaemonUnavailable, MemdError
from memd.settings import Settings


def daemon_request(
    settings: Settings, cmd: str, timeout: float | None = 600.0, **args: Any
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


def run(settings: Settings, cmd: str, *, writer: bool, **args: Any) -> dict[str, Any]:
    """``cmd`` is an ``App`` method name; the daemon dispatches the same name."""
    try:
        return daemon_request(settings, cmd, **args)
    except DaemonUnavailable:
        pass
    from memd.app import App

    app = App(settings).open(writer=writer)
    try:
        return {"ok": True, **getattr(app, cmd)(**args)}
    finally:
        app.close()
