"""The daemon's Unix socket server: one JSON object per line in, one reply out.

A command runs ``cmd_<name>`` of the server (``ping``, ``status``, ``context``, ``hook``), else
the ``App`` method that :data:`memd.daemon.commands.APP_COMMANDS` names for it, in that table's pool.

The event loop only moves bytes: the work runs in the thread pools of :mod:`memd.daemon.pools`. The
server also runs the flush loop (hit counters, heap trim) and the extraction loop.

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
from memd.daemon.app import Workers
from memd.daemon.commands import APP_COMMANDS, AppCommand
from memd.daemon.hooksessions import HookSessions
from memd.daemon.pools import Pools
from memd.daemon.unixsocket import SocketFile, same_user
from memd.errors import MemdError, UserError
from memd.heap import release_library_pages, trim_heap
from memd.recall.hits import chosen_json, left_out_json
from memd.recall.inject import Injection, Injector

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.ingest.state import State
    from memd.settings import Settings

log = logging.getLogger(__name__)

HOOK_EVENTS = ("session-start", "user-prompt-submit", "stop", "session-end")
DRAIN_SECONDS = 5.0
"""How long shutdown waits for in-flight requests."""
WRITE_TIMEOUT = 10.0
"""A client that does not read its reply within this time is dropped."""
EXTRACT_BATCH = 2
"""Segments per ``process_pending`` call: shutdown waits for at most one such batch."""
EXTRACT_POLL_SECONDS = 30.0
"""Closed segments wake the extraction loop at once; this poll only catches retries."""
TRIM_EVERY_SECONDS = 30.0
"""After activity, freed heap goes back to the OS at most this often (see :func:`trim_heap`)."""
TRIM_IDLE_SECONDS = 1.0
"""... and once no request has arrived for this long, so no hook waits for it ..."""
TRIM_BUSY_SECONDS = 60.0
"""... unless the daemon has been busy that long: then it trims anyway (~8 ms at 100k)."""
RELEASE_IDLE_SECONDS = 30.0
"""After heavy work (extraction runs, scheduled jobs), once no request has arrived for this long,
the resident pages of the mapped libraries are dropped (see :func:`release_library_pages`). Not
after every quiet spell: the first hook after a release pays ~1-2 ms of minor faults
(``bench/release_latency.py``), so plain hook traffic never triggers one."""
WARM_PROJECTS = 5
"""At start, the vector cache of this many recently active projects is built in the background."""
QUIET_AFTER_SECONDS = 30.0
IDLE_FLUSH_SECONDS = 60.0
"""With nothing queued and no request for ``QUIET_AFTER_SECONDS``, the flush loop sleeps this
long instead of ``flush_seconds`` (the next request wakes it): an idle daemon stays asleep."""


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


class Server:
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
        app.resident = True  # the model stays loaded: hooks need it
        app.keep_keys()  # list pages and status counts from memory (memd.store.keyindex)
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

    def after_warm_up(self, warmed: asyncio.Future[Any]) -> None:
        """Start-up ran code once (imports, the model, the key index, the vector caches) whose
        library pages would stay in RSS: give them back now, off the event loop."""
        if warmed.cancelled() or warmed.exception() is not None:
            return
        if self.stopping is None or self.stopping.is_set():
            return
        with contextlib.suppress(RuntimeError):  # the read pool is shutting down
            self.pools.submit("read", self.release_pages, "after start-up")

    def release_pages(self, why: str) -> int:
        """:func:`release_library_pages`, counted for ``memd status`` and logged; bytes released."""
        released = release_library_pages()
        if released:
            pages = self.library_pages
            pages["releases"] += 1
            pages["last_bytes"] = released
            pages["total_bytes"] += released
            log.info("released %.1f MiB of library pages (%s)", released / 2**20, why)
        return released

    def warm_keys(self) -> None:
        """The key index (memd.store.keyindex), built before the first list page or status needs it."""
        try:
            keys = self.app.keep_keys()
            keys.ensure()
            log.info("key index built: %d memories", keys.counts()["total"])
        except Exception as exc:  # best effort: the first read builds it
            log.warning("building the key index failed: %s", exc)

    def warm_caches(self, state: State) -> None:
        """Vectors of the most recently active projects, in memory before their first hook."""
        try:
            projects = state.recent_projects(WARM_PROJECTS)
            rows = self.injector.warm(projects)
            trim_heap()
            log.info("vector cache warmed: %d project(s), %d memories", len(projects), rows)
        except Exception as exc:  # best effort
            log.warning("warming the vector cache failed: %s", exc)

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

    # ---- background loops
    async def flush_loop(self) -> None:
        assert self.stopping is not None and self.flush_wakeup is not None
        while not self.stopping.is_set():
            busy = (
                self.injector.pending_writes()
                or time.monotonic() - self.last_request_at < QUIET_AFTER_SECONDS
            )
            self.flush_wakeup.clear()
            self.flush_sleeping = not busy
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.flush_wakeup.wait(),
                    self.settings.flush_seconds if busy else IDLE_FLUSH_SECONDS,
                )
            self.flush_sleeping = False
            await self.maybe_trim()
            await self.maybe_release()
            if not self.injector.pending_writes():
                continue  # idle: not even a thread hop
            try:
                await self.pools.run("write", self.injector.flush)
            except Exception as exc:
                log.error("flushing hit counters failed: %s", exc)

    async def maybe_trim(self) -> None:
        """Trim the heap after activity, at most every ``TRIM_EVERY_SECONDS``: when idle, or
        after ``TRIM_BUSY_SECONDS`` of steady load."""
        now = time.monotonic()
        activity = self.counters["requests"] + self.extraction_runs
        last_at, last_activity = self._trimmed
        if activity == last_activity or now - last_at < TRIM_EVERY_SECONDS:
            return
        if now - self.last_request_at < TRIM_IDLE_SECONDS and now - last_at < TRIM_BUSY_SECONDS:
            return
        self._trimmed = (now, activity)
        await asyncio.to_thread(trim_heap)

    async def maybe_release(self) -> None:
        """Give the libraries' pages (and the stored texts' model graph) back after heavy work
        (segments extracted, scheduled jobs, a load of that graph; not the extraction loop's
        empty polls) once no request has arrived for ``RELEASE_IDLE_SECONDS``: once per batch
        of such work, never for requests alone (the first hook after a release faults its code
        back in)."""
        scheduler = self.workers.scheduler
        heavy = self.segments_extracted + (scheduler.runs if scheduler is not None else 0)
        heavy += self.app.store.embedder.passage_loads  # a `memd add` loaded the float graph
        if heavy == self._released_activity:
            return
        if time.monotonic() - self.last_request_at < RELEASE_IDLE_SECONDS:
            return
        self._released_activity = heavy
        await asyncio.to_thread(self.release_after_work)

    def release_after_work(self) -> None:
        """The stored texts' model graph (reloaded by the next stored text), then the heap it
        leaves free, then the libraries' pages."""
        if self.app.store.embedder.release_passages():
            trim_heap()
            log.info("released the stored texts' model graph")
        self.release_pages("after extraction or jobs")

    async def extraction_loop(self) -> None:
        assert self.stopping is not None and self.extract_wakeup is not None
        pipeline = self.workers.pipeline
        if pipeline is None:
            return
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.extract_wakeup.wait(), EXTRACT_POLL_SECONDS)
            self.extract_wakeup.clear()
            if self.stopping.is_set():
                break
            try:
                done = await self.pools.run("extract", pipeline.process_pending, EXTRACT_BATCH)
            except Exception as exc:
                log.error("extraction failed: %s", exc)
                await asyncio.sleep(min(30.0, self.settings.flush_seconds * 5))
                continue
            self.extraction_runs += 1
            if done:
                self.segments_extracted += done
                cached = self.injector.vectors.cached_projects()
                self.injector.vectors.invalidate()
                # Build the caches again now, off the hook path: the next prompt finds them.
                with contextlib.suppress(RuntimeError):  # the read pool is shutting down
                    self.pools.submit("read", self.injector.warm, cached)
                log.info("extracted %d segment(s)", done)
                self.extract_wakeup.set()  # there may be more

    def wake_extraction(self) -> None:
        if self.extract_wakeup is not None:
            self.extract_wakeup.set()

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
