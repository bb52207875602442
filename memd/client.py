"""The one client of the daemon's socket: :class:`DaemonClient`, one typed method per command.

The CLI, the MCP server and the UI speak to the daemon only through it (the hook keeps its own
import-free client in :mod:`memd.hook`); :class:`AsyncDaemonClient` serves the two that run an
event loop. A method sends the keyword arguments its caller gave and no others (one left out takes
the daemon's default), and returns its command's reply as the TypedDict of :mod:`memd.protocol`.
``tests/test_client.py`` checks the methods against the daemon's command table.

A CLI command that the daemon answers should cost little more than the interpreter's start:
:class:`Target` finds the daemon's socket without building ``Settings`` (pydantic and
pydantic-settings take ~150 ms to import), by the same rule (``memd.hook.locate``, tested against
``Settings``). With ``local=True`` (the CLI), a command that no daemon answers runs in this
process under the writer lock, as the same ``App`` method the daemon would run; only then are the
full ``Settings`` built.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, Unpack, cast

from memd import protocol
from memd.errors import DaemonNoReply, DaemonUnavailable, MemdError

if TYPE_CHECKING:
    from pathlib import Path

    from memd.settings import Settings

Progress = Callable[[dict[str, Any]], None]
"""``ingest``'s progress reports: reach only an in-process run (the socket does not stream)."""


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


class DaemonClient:
    """The daemon's commands as methods. Raises ``DaemonUnavailable`` when nobody answers,
    ``DaemonNoReply`` when the daemon took the request but did not answer, and ``MemdError``
    with the daemon's message when it refused the request.

    ``where``: a socket path, ``Settings`` or a :class:`Target`. ``timeout``: seconds to wait
    for a reply (None: as long as it takes). ``local``: when no daemon answers, run an ``App``
    command in this process instead, reporting to ``progress``.
    """

    def __init__(
        self,
        where: str | Path | Settings | Target,
        *,
        timeout: float | None = 600.0,
        local: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.where = where
        self.timeout = timeout
        self.local = local
        self.progress = progress

    @property
    def socket_path(self) -> str:
        if isinstance(self.where, (str, os.PathLike)):
            return str(self.where)
        return str(self.where.socket_path)

    def call(self, cmd: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """One command, untyped: the methods below are this with their command's types."""
        try:
            return self.request(cmd, args)
        except DaemonUnavailable:
            if not self.local or not self.runs_here(cmd):
                raise
        return self.run_here(cmd, args)

    def request(self, cmd: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """One request to the running daemon, and its ``{"ok": true, ...}`` reply."""
        path = self.socket_path
        try:
            reply = protocol.request(path, {"cmd": cmd, **args}, timeout=self.timeout)
        except protocol.NoReply as exc:
            # It has the request and may still be working on it: never redo it locally.
            raise DaemonNoReply(f"{exc} (see `memd status`)") from exc
        except (OSError, ValueError) as exc:
            raise DaemonUnavailable(f"the daemon at {path} is not reachable: {exc}") from exc
        if not reply.get("ok"):
            raise MemdError(str(reply.get("error") or "the daemon refused the request"))
        return reply

    @staticmethod
    def runs_here(cmd: str) -> bool:
        """Whether ``cmd`` can run without a daemon (the ``App`` commands; not ``hook``)."""
        from memd.daemon.commands import APP_COMMANDS

        return cmd in APP_COMMANDS

    def run_here(self, cmd: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """``App`` command ``cmd`` in this process; one that changes memories takes the writer
        lock (``LockedError`` while another process holds it)."""
        from memd.daemon.app import App
        from memd.daemon.commands import APP_COMMANDS

        command = APP_COMMANDS[cmd]
        kwargs = dict(args)
        if self.progress is not None:
            kwargs["progress"] = self.progress
        if isinstance(self.where, (str, os.PathLike)):  # a bare socket path: no settings
            raise DaemonUnavailable(f"the daemon at {self.where} is not reachable")
        app = App(settings_of(self.where))
        if command.store:
            app.open(writer=command.changes)
        try:
            result: dict[str, Any] = getattr(app, command.method)(**kwargs)
            return {"ok": True, **result}
        finally:
            app.close()

    # ---- the server's own commands (``Server.cmd_<name>``)
    def ping(self) -> protocol.PingReply:
        return cast(protocol.PingReply, self.call("ping", {}))

    def status(self) -> protocol.StatusReply:
        """The daemon's health (DESIGN.md "Status")."""
        return cast(protocol.StatusReply, self.call("status", {}))

    def context(self, **request: Unpack[protocol.ContextRequest]) -> protocol.ContextReply:
        """What a hook would inject, changing nothing (the UI's preview)."""
        return cast(protocol.ContextReply, self.call("context", request))

    def hook(self, **request: Unpack[protocol.HookRequest]) -> protocol.HookReply:
        return cast(protocol.HookReply, self.call("hook", request))

    # ---- reads (``App`` methods, named as in APP_COMMANDS)
    def search(self, **request: Unpack[protocol.SearchRequest]) -> protocol.SearchReply:
        return cast(protocol.SearchReply, self.call("search", request))

    def find(self, **request: Unpack[protocol.FindRequest]) -> protocol.FindReply:
        return cast(protocol.FindReply, self.call("find", request))

    def list_memories(self, **request: Unpack[protocol.ListRequest]) -> protocol.ListReply:
        return cast(protocol.ListReply, self.call("list", request))

    def show(self, **request: Unpack[protocol.ShowRequest]) -> protocol.ShowReply:
        return cast(protocol.ShowReply, self.call("show", request))

    def stats(self, **request: Unpack[protocol.StatsRequest]) -> protocol.StatsReply:
        return cast(protocol.StatsReply, self.call("stats", request))

    def sessions(self, **request: Unpack[protocol.SessionsRequest]) -> protocol.SessionsReply:
        return cast(protocol.SessionsReply, self.call("sessions", request))

    def projects(self, **request: Unpack[protocol.ProjectsRequest]) -> protocol.ProjectsReply:
        return cast(protocol.ProjectsReply, self.call("projects", request))

    def export(self, **request: Unpack[protocol.ExportRequest]) -> protocol.ExportReply:
        return cast(protocol.ExportReply, self.call("export", request))

    def jobs(self) -> protocol.JobsReply:
        return cast(protocol.JobsReply, self.call("jobs", {}))

    def sync_enable(
        self, **request: Unpack[protocol.SyncEnableRequest]
    ) -> protocol.SyncEnableReply:
        return cast(protocol.SyncEnableReply, self.call("sync_enable", request))

    def sync_disable(
        self, **request: Unpack[protocol.SyncDisableRequest]
    ) -> protocol.SyncDisableReply:
        return cast(protocol.SyncDisableReply, self.call("sync_disable", request))

    def sync_status(self) -> protocol.SyncStatusReply:
        return cast(protocol.SyncStatusReply, self.call("sync_status", {}))

    def sync_now(self) -> protocol.SyncNowReply:
        return cast(protocol.SyncNowReply, self.call("sync_now", {}))

    # ---- writes
    def add(self, **request: Unpack[protocol.AddRequest]) -> protocol.AddReply:
        return cast(protocol.AddReply, self.call("add", request))

    def edit(self, **request: Unpack[protocol.EditRequest]) -> protocol.MemoryReply:
        return cast(protocol.MemoryReply, self.call("edit", request))

    def archive(self, **request: Unpack[protocol.ArchiveRequest]) -> protocol.MemoryReply:
        return cast(protocol.MemoryReply, self.call("archive", request))

    def forget(self, **request: Unpack[protocol.ForgetRequest]) -> protocol.ForgetReply:
        return cast(protocol.ForgetReply, self.call("forget", request))

    def pin(self, **request: Unpack[protocol.PinRequest]) -> protocol.PinReply:
        return cast(protocol.PinReply, self.call("pin", request))

    def restore(self, **request: Unpack[protocol.RestoreRequest]) -> protocol.RestoreReply:
        return cast(protocol.RestoreReply, self.call("restore", request))

    def import_memories(self, **request: Unpack[protocol.ImportRequest]) -> protocol.ImportReply:
        return cast(protocol.ImportReply, self.call("import_memories", request))

    def reindex(self) -> protocol.ReindexReply:
        return cast(protocol.ReindexReply, self.call("reindex", {}))

    def jobs_run(self, **request: Unpack[protocol.JobsRunRequest]) -> protocol.JobsRunReply:
        return cast(protocol.JobsRunReply, self.call("jobs_run", request))

    # ---- long work
    def ingest(self, **request: Unpack[protocol.IngestRequest]) -> protocol.IngestReply:
        return cast(protocol.IngestReply, self.call("ingest", request))


P = ParamSpec("P")
R = TypeVar("R")


def off_loop(
    method: Callable[Concatenate[DaemonClient, P], R],
) -> Callable[Concatenate[AsyncDaemonClient, P], Coroutine[Any, Any, R]]:
    """``method`` of :class:`DaemonClient`, awaited in a worker thread of the event loop."""

    async def call(self: AsyncDaemonClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        import anyio.to_thread

        bound = functools.partial(method, self.client, *args, **kwargs)
        try:
            return await anyio.to_thread.run_sync(bound)
        except MemdError as exc:
            if self.error is None:
                raise
            raise self.error(exc) from exc

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class AsyncDaemonClient:
    """:class:`DaemonClient` for an event loop (the MCP server, the UI): each request waits in
    a worker thread. ``error`` turns the client's errors into the caller's own (MCP's
    ``ToolError``); without it they propagate as they are."""

    def __init__(
        self, client: DaemonClient, error: Callable[[MemdError], Exception] | None = None
    ) -> None:
        self.client = client
        self.error = error

    ping = off_loop(DaemonClient.ping)
    status = off_loop(DaemonClient.status)
    context = off_loop(DaemonClient.context)
    hook = off_loop(DaemonClient.hook)
    search = off_loop(DaemonClient.search)
    find = off_loop(DaemonClient.find)
    list_memories = off_loop(DaemonClient.list_memories)
    show = off_loop(DaemonClient.show)
    stats = off_loop(DaemonClient.stats)
    sessions = off_loop(DaemonClient.sessions)
    projects = off_loop(DaemonClient.projects)
    export = off_loop(DaemonClient.export)
    jobs = off_loop(DaemonClient.jobs)
    sync_enable = off_loop(DaemonClient.sync_enable)
    sync_disable = off_loop(DaemonClient.sync_disable)
    sync_status = off_loop(DaemonClient.sync_status)
    sync_now = off_loop(DaemonClient.sync_now)
    add = off_loop(DaemonClient.add)
    edit = off_loop(DaemonClient.edit)
    archive = off_loop(DaemonClient.archive)
    forget = off_loop(DaemonClient.forget)
    pin = off_loop(DaemonClient.pin)
    restore = off_loop(DaemonClient.restore)
    import_memories = off_loop(DaemonClient.import_memories)
    reindex = off_loop(DaemonClient.reindex)
    jobs_run = off_loop(DaemonClient.jobs_run)
    ingest = off_loop(DaemonClient.ingest)
