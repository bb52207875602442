"""The daemon's Unix socket server: one JSON object per line in, one reply out.

A command runs ``cmd_<name>`` of the server (``ping``, ``status``, ``context``, ``hook``), else
the ``App`` method that :data:`memd.daemon.commands.APP_COMMANDS` names for it, in that table's pool.

The event loop only moves bytes: the work runs in the thread pools of :mod:`memd.daemon.pools`. The
flush loop and memory release are :mod:`memd.daemon.housekeeping`'s, the extraction loop
:mod:`memd.daemon.extraction`'s (both mixed into :class:`Server`).

A bad client never hurts the others: malformed JSON, unknown commands, lines over
``protocol.MAX_LINE``, binary garbage and idle or half-open connections get an error reply or a
closed connection. Peers with another uid are refused (:mod:`memd.daemon.unixsocket`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from memd import __version__, protocol
from memd.daemon import status
from memd.daemon.commands import APP_COMMANDS, AppCommand
from memd.daemon.core import Workers
from memd.daemon.extraction import Extraction
from memd.daemon.hooksessions import HookSessions
from memd.daemon.housekeeping import Housekeeping
from memd.daemon.pools import Pools
from memd.daemon.unixsocket import SocketFile, same_user
from memd.errors import MemdError, UserError
from memd.recall.hits import chosen_json, left_out_json
from memd.recall.inject import Injection, Injector

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.settings import Settings

log = logging.getLogger(__name__)

HOOK_EVENTS = ("session-start", "user-prompt-submit", "stop", "session-end")
DRAIN_SECONDS = 5.0
"""How long shutdown waits for in-flight requests."""
WRITE_TIMEOUT = 10.0
"""A client that does not read its reply within this time is dropped."""


def encode_reply(reply: dict[str, Any], hook: bool = False) -> bytes:
    """Replies are JSON lines. A successful hook reply is exactly ``{"ok":true,"context":"..."}``
    with ASCII escapes, so memd-hook can read it without importing json."""
    if hook and reply.get("ok"):
        text = json.dumps(str(reply.get("context") or ""), ensure_ascii=True)
        return b'{"ok":true,"context":' + text.encode("ascii") + b"}\n"
    return protocol.encode(reply)


class Connection:
    def __init__(self, task: asyncio.Task[None] | None) -> None:
        self.task = task
        self.busy = False


class Server(Housekeeping, Extraction):
    """Serves requests; owns the thread pools, the flush loop and the extraction loop."""

    def __init__(
        self,
        app: App,
        settings: Settings,
        workers: Workers | None = None,
        *,
        socket: SocketFile | None = None,
        errors: deque[dict[str, Any]] | None = None,
        read_threads: int = 8,
    ) -> None:
        self.app = app
        self.settings = settings
        self.workers = workers or Workers()
        self.errors: deque[dict[str, Any]] = errors if errors is not None else deque(maxlen=10)
        app.workers = self.workers  # `ingest` and `jobs` use the live ones
        if not app.resident:  # the model stays loaded for hooks, the key index for list pages
            raise ValueError("the daemon serves a resident App: App(settings, resident=True)")
        self.injector = Injector(app, settings, self.workers.state)
        self.sessions = HookSessions(settings, self.workers.tailer, self.workers.tracker)
        self.socket = socket or SocketFile(settings.socket_path)
        self.path = self.socket.path
        self.idle_timeout = float(settings.client_idle_seconds)
        self.pools = Pools(read_threads)
        self.connections: dict[int, Connection] = {}
        self.started_at = time.time()
        self.counters = {"requests": 0, "errors": 0, "refused": 0, "connections": 0, "late": 0}
        self.signatures: dict[str, inspect.Signature] = {}  # made once each: ~30 µs apiece
        self.last_request_at = 0.0
        self._trimmed: tuple[float, int] = (0.0, 0)
        self._released_activity = 0
        self._heavy_seen = (0.0, 0)
        self.library_pages = {"releases": 0, "last_bytes": 0, "total_bytes": 0}
        """What :meth:`release_pages` gave back (``memd status --json``: ``library_pages``)."""
        self.stopping: asyncio.Event | None = None
        """Set once shutdown was asked (made in ``start``: it belongs to the running loop)."""
        self.extract_wakeup: asyncio.Event | None = None
        self.flush_wakeup: asyncio.Event | None = None
        self.flush_sleeping = False
        self.extraction_runs = 0
        """``process_pending`` calls, including the polls that found nothing to do."""
        self.segments_extracted = 0
        self._server: asyncio.AbstractServer | None = None
        self._loops: list[asyncio.Task[None]] = []

    # ---- lifecycle
    async def start(self) -> None:
        self.stopping = asyncio.Event()
        self.extract_wakeup = asyncio.Event()
        self.flush_wakeup = asyncio.Event()
        self._server = await asyncio.start_unix_server(
            self.serve_client, sock=self.socket.bind(), limit=protocol.MAX_LINE + 1, backlog=1024
        )
        self._loops = [
            asyncio.create_task(self.flush_loop(), name="memd-flush"),
            asyncio.create_task(self.extraction_loop(), name="memd-extraction"),
        ]
        log.info("memd %s listening on %s (pid %d)", __version__, self.path, os.getpid())
        warming = [self.pools.submit("read", self.warm_keys)]
        if self.workers.state is not None:
            warming.append(self.pools.submit("read", self.warm_caches, self.workers.state))
        asyncio.gather(*warming).add_done_callback(self.after_warm_up)

    def stop(self) -> None:
        """Ask the server to shut down (safe from a signal handler via call_soon_threadsafe)."""
        for event in (self.stopping, self.extract_wakeup, self.flush_wakeup):
            if event is not None:
                event.set()

    async def serve_until_stopped(self) -> None:
        assert self.stopping is not None
        await self.stopping.wait()
        await self.shutdown()

    async def shutdown(self, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Stop accepting, drain in-flight requests, stop loops; the daemon closes the rest."""
        self.stop()
        if self._server is not None:
            self._server.close()  # stop accepting
        idle = [c.task for c in self.connections.values() if not c.busy and c.task]
        for task in idle:
            task.cancel()
        busy = [c.task for c in self.connections.values() if c.busy and c.task]
        if busy:
            log.info("draining %d in-flight request(s)", len(busy))
            _done, pending = await asyncio.wait(busy, timeout=drain_seconds)
            for task in pending:
                task.cancel()
        if self._loops:
            await asyncio.wait(self._loops, timeout=drain_seconds)
        with contextlib.suppress(Exception):
            if self._server is not None:
                await asyncio.wait_for(self._server.wait_closed(), 1.0)

    def close_pools(self, timeout: float) -> bool:
        """Wait for running work (the current extraction batch, queued writes). True if done."""
        ok = self.pools.close(timeout)
        self.injector.queries.close()
        return ok

    # ---- connections
    async def serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn = Connection(asyncio.current_task())
        key = id(conn)
        self.connections[key] = conn
        self.counters["connections"] += 1
        try:
            if not same_user(writer.get_extra_info("socket")):
                self.counters["refused"] += 1
                await self.send(writer, protocol.error("permission denied: not the daemon's user"))
                return
            await self.read_requests(reader, writer, conn)
        except (ConnectionError, asyncio.CancelledError, TimeoutError):
            pass
        except Exception as exc:  # never let one client take the server down
            log.error("connection failed: %s", exc)
        finally:
            self.connections.pop(key, None)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def read_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection
    ) -> None:
        assert self.stopping is not None
        while not self.stopping.is_set():
            last = False
            try:
                line = await asyncio.wait_for(reader.readuntil(b"\n"), self.idle_timeout)
            except TimeoutError:
                return  # idle or too slow: close
            except asyncio.IncompleteReadError as exc:
                line, last = exc.partial, True  # EOF: a last line without newline still counts
                if not line.strip():
                    return
            except (asyncio.LimitOverrunError, ValueError):
                self.counters["errors"] += 1
                await self.send(writer, protocol.error("request line over 1 MiB"))
                return
            if not line.strip():
                continue
            conn.busy = True
            try:
                reply, hook = await self.handle_line(line)
                await self.send(writer, reply, hook)
            finally:
                conn.busy = False
            if last:
                return

    async def send(
        self, writer: asyncio.StreamWriter, reply: dict[str, Any], hook: bool = False
    ) -> None:
        writer.write(encode_reply(reply, hook))
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)

    # ---- dispatch
    async def handle_line(self, line: bytes) -> tuple[dict[str, Any], bool]:
        """One request line to one reply. Never raises."""
        self.counters["requests"] += 1
        self.last_request_at = time.monotonic()
        if self.flush_sleeping and self.flush_wakeup is not None:
            self.flush_wakeup.set()  # back to flushing every flush_seconds
        try:
            request = protocol.decode(line)
        except (ValueError, UnicodeDecodeError):
            self.counters["errors"] += 1
            return protocol.error("malformed request: expected one JSON object per line"), False
        cmd = request.pop("cmd", None)
        handler = self.handler(cmd)
        if handler is None:
            self.counters["errors"] += 1
            return protocol.error(f"unknown command {cmd!r}"), False
        if (signature := self.signatures.get(cmd)) is None:  # cmd names a handler: few keys
            signature = self.signatures[cmd] = inspect.signature(handler)
        try:
            signature.bind(**request)
        except TypeError as exc:
            self.counters["errors"] += 1
            return protocol.error(f"bad arguments for {cmd}: {exc}"), False
        try:
            result = await handler(**request)
        except MemdError as exc:
            self.counters["errors"] += 1
            return protocol.error(str(exc)), False
        except Exception as exc:
            self.counters["errors"] += 1
            log.exception("command %s failed", cmd)
            return protocol.error(f"internal error in {cmd}: {exc}"), False
        return {"ok": True, **result}, cmd == "hook"

    def handler(self, cmd: object) -> Callable[..., Awaitable[dict[str, Any]]] | None:
        """``cmd_<name>`` of this server, else the ``App`` command of that name; None if none."""
        if not isinstance(cmd, str) or not cmd.isidentifier():
            return None
        own: Callable[..., Awaitable[dict[str, Any]]] | None = getattr(self, f"cmd_{cmd}", None)
        if own is not None:
            return own
        command = APP_COMMANDS.get(cmd)
        if command is None:
            return None
        method = getattr(self.app, command.method)

        @functools.wraps(method)  # its signature checks the arguments
        async def call_app(**args: Any) -> dict[str, Any]:
            return await self.call_app(command, functools.partial(method, **args))

        return call_app

    async def call_app(
        self, command: AppCommand, call: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """Run an ``App`` call in its command's pool; drop the recall cache after a change."""
        try:
            return await self.pools.run(command.pool, call)
        finally:
            if command.changes:
                self.injector.vectors.invalidate()

    # ---- the server's own commands
    async def cmd_ping(self) -> dict[str, Any]:
        return {"pong": True, "pid": os.getpid(), "version": __version__}

    async def cmd_status(self) -> dict[str, Any]:
        return await self.pools.run("read", self.status)

    async def cmd_context(
        self,
        cwd: str | None = None,
        prompt: str | None = None,
        event: str = "user-prompt-submit",
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """What a hook would inject, without changing anything (a preview for debugging)."""
        payload = {"cwd": cwd, "prompt": prompt or "", "session_id": session_id or ""}
        build = (
            self.injector.session_context
            if event == "session-start"
            else self.injector.prompt_context
        )
        result = await self.pools.run("read", lambda: build(payload, dedupe=False, touch=False))
        return {
            "context": result.text,
            "chosen": [chosen_json(c) for c in result.chosen],
            "left_out": [left_out_json(x) for x in result.left_out],
            "reason": result.reason,
        }

    async def cmd_hook(self, event: str, payload: Any = None) -> dict[str, Any]:
        if event not in HOOK_EVENTS:
            raise UserError(f"unknown hook event {event!r}")
        if not isinstance(payload, dict):
            raise UserError("the hook payload must be a JSON object")
        session_id = str(payload.get("session_id") or "")
        self.sessions.seen(session_id)
        if event in ("user-prompt-submit", "session-start"):
            with self.app.reader.hook():  # the read-ahead waits (memd.recall.readahead)
                if event == "user-prompt-submit":
                    self.injector.prefetch(payload, functools.partial(self.pools.submit, "write"))
                build = (
                    self.injector.prompt_context
                    if event == "user-prompt-submit"
                    else self.injector.session_context
                )
                result = await self.pools.run(
                    "read", self.unless_late, build, payload, time.monotonic()
                )
            return {"context": result.text if result else ""}
        transcript = str(payload.get("transcript_path") or "")
        if event == "stop":
            self.sessions.poll_soon(transcript)
        if event == "session-end" and session_id:
            self.close_session_soon(session_id, transcript)
        return {"context": ""}

    def unless_late(
        self, build: Callable[[dict[str, Any]], Injection], payload: dict[str, Any], since: float
    ) -> Injection | None:
        """Build the context, unless the hook waited in the queue past its own timeout: then
        nobody reads the answer, and computing it would only delay the hooks behind it."""
        if time.monotonic() - since > self.settings.hook_timeout_seconds:
            self.counters["late"] += 1
            return None
        return build(payload)

    def close_session_soon(self, session_id: str, transcript: str = "") -> None:
        """Queue the session's open segment for extraction; the reply does not wait for it."""
        if not self.sessions.can_close:
            log.warning("session-end for %s: nothing can close it here", session_id)
            return
        future = self.pools.submit("extract", self.sessions.close, session_id, transcript)
        future.add_done_callback(lambda _f: self.wake_extraction())

    def status(self) -> dict[str, Any]:
        return status.report(self)
