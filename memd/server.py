"""The daemon's Unix socket server: one JSON object per line, handlers named ``cmd_<name>``.

The event loop only moves bytes. Searches and hooks run in a small read pool; writes through
``App`` (add, forget, pin, ...) and the batched hit counters run in one writer thread; extraction
runs in its own single thread, so a slow LLM call never holds up ``memd add``.

A bad client never hurts the others: malformed JSON, unknown commands, lines over
``protocol.MAX_LINE``, binary garbage and idle or half-open connections get an error reply or a
closed connection. Peers with another uid are refused (SO_PEERCRED / getpeereid).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import os
import socket
import stat
import struct
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from memd import __version__, protocol
from memd.errors import MemdError, UserError
from memd.heap import trim_heap
from memd.inject import Injection, Injector

log = logging.getLogger(__name__)

T = TypeVar("T")

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
WARM_PROJECTS = 5
"""At start, the vector cache of this many recently active projects is built in the background."""
QUIET_AFTER_SECONDS = 30.0
IDLE_FLUSH_SECONDS = 60.0
"""With nothing queued and no request for ``QUIET_AFTER_SECONDS``, the flush loop sleeps this
long instead of ``flush_seconds`` (the next request wakes it): an idle daemon stays asleep."""


class ServerError(MemdError):
    """The socket cannot be set up (another daemon listens there, or the path is unusable)."""

    exit_code = 3


# ---- the socket file and its directory
def prepare_socket_dir(path: Path) -> None:
    """Create the socket's directory 0700, or tighten it when it is ours and private."""
    parent = path.parent
    if not parent.exists():
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        parent.chmod(0o700)
        return
    st = parent.stat()
    shared = bool(st.st_mode & stat.S_ISVTX) or parent.resolve() == Path.home().resolve()
    if st.st_uid == os.getuid() and not shared:
        if stat.S_IMODE(st.st_mode) != 0o700:
            parent.chmod(0o700)
    else:
        log.warning(
            "socket directory %s is shared or not ours; relying on the socket's 0600 mode "
            "and the peer uid check",
            parent,
        )


def clear_stale_socket(path: Path) -> None:
    """Remove a socket file left by a crash, only after a connection attempt to it failed."""
    if not os.path.lexists(path):
        return
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise ServerError(f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        log.info("removing stale socket %s (nobody listens on it)", path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ServerError(f"cannot check the existing socket {path}: {exc}") from exc
    finally:
        probe.close()
    raise ServerError(f"another memd daemon is listening on {path}")


def bind_socket(path: Path) -> socket.socket:
    """A listening AF_UNIX socket at ``path``, mode 0600 from the start (umask)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ServerError(f"cannot bind the socket {path}: {exc}") from exc
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end, or None when the platform cannot tell."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return uid
    return _getpeereid(sock.fileno())


def _getpeereid(fd: int) -> int | None:  # pragma: no cover - macOS and the BSDs
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if libc.getpeereid(fd, ctypes.byref(uid), ctypes.byref(gid)) != 0:
        return None
    return int(uid.value)


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
        app: Any,
        settings: Any,
        *,
        state: Any = None,
        pipeline: Any = None,
        scheduler: Any = None,
        tailer: Any = None,
        tracker: Any = None,
        errors: deque[dict[str, Any]] | None = None,
        read_threads: int = 8,
    ) -> None:
        self.app = app
        self.settings = settings
        self.state = state
        self.pipeline = pipeline
        self.scheduler = scheduler
        self.tailer = tailer
        self.tracker = tracker
        self.errors: deque[dict[str, Any]] = errors if errors is not None else deque(maxlen=10)
        self.injector = Injector(app, settings, state)
        app.resident = True  # the model stays loaded: hooks need it
        app.keep_keys()  # list pages and status counts from memory (memd.keyindex)
        self.path = Path(settings.socket_path)
        self.idle_timeout = float(getattr(settings, "client_idle_seconds", 10.0))
        self.reads = ThreadPoolExecutor(read_threads, thread_name_prefix="memd-read")
        self.writes = ThreadPoolExecutor(1, thread_name_prefix="memd-write")
        self.extraction = ThreadPoolExecutor(1, thread_name_prefix="memd-extract")
        self.connections: dict[int, Connection] = {}
        self.started_at = time.time()
        self.counters = {"requests": 0, "errors": 0, "refused": 0, "connections": 0, "late": 0}
        self.last_request_at = 0.0
        self._trimmed: tuple[float, int] = (0.0, 0)
        self.should_exit: asyncio.Event | None = None
        self.extract_wakeup: asyncio.Event | None = None
        self.flush_wakeup: asyncio.Event | None = None
        self.flush_sleeping = False
        self.active_sessions: dict[str, float] = {}
        self.extraction_runs = 0
        self._server: asyncio.AbstractServer | None = None
        self._loops: list[asyncio.Task[None]] = []
        self._sock_ino: int | None = None

    # ---- lifecycle
    async def start(self) -> None:
        self.should_exit = asyncio.Event()
        self.extract_wakeup = asyncio.Event()
        self.flush_wakeup = asyncio.Event()
        sock = bind_socket(self.path)
        self._sock_ino = os.stat(self.path).st_ino
        self._server = await asyncio.start_unix_server(
            self.serve_client, sock=sock, limit=protocol.MAX_LINE + 1, backlog=1024
        )
        self._loops = [
            asyncio.create_task(self.flush_loop(), name="memd-flush"),
            asyncio.create_task(self.extraction_loop(), name="memd-extraction"),
        ]
        log.info("memd %s listening on %s (pid %d)", __version__, self.path, os.getpid())
        loop = asyncio.get_running_loop()
        loop.run_in_executor(self.reads, self.warm_keys)
        if self.state is not None:
            loop.run_in_executor(self.reads, self.warm_caches)

    def warm_keys(self) -> None:
        """The key index (memd.keyindex), built before the first list page or status needs it."""
        try:
            keys = self.app.keep_keys()
            keys.ensure()
            log.info("key index built: %d memories", keys.counts()["total"])
        except Exception as exc:  # best effort: the first read builds it
            log.warning("building the key index failed: %s", exc)

    def warm_caches(self) -> None:
        """Vectors of the most recently active projects, in memory before their first hook."""
        try:
            projects = self.state.recent_projects(WARM_PROJECTS)
            rows = self.injector.warm(projects)
            trim_heap()
            log.info("vector cache warmed: %d project(s), %d memories", len(projects), rows)
        except Exception as exc:  # best effort
            log.warning("warming the vector cache failed: %s", exc)

    def stop(self) -> None:
        """Ask the server to shut down (safe from a signal handler via call_soon_threadsafe)."""
        if self.should_exit is not None:
            self.should_exit.set()
        if self.extract_wakeup is not None:
            self.extract_wakeup.set()
        if self.flush_wakeup is not None:
            self.flush_wakeup.set()

    async def serve_until_stopped(self) -> None:
        assert self.should_exit is not None
        await self.should_exit.wait()
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
        deadline = time.monotonic() + timeout
        ok = True
        for pool in (self.reads, self.extraction, self.writes):
            pool.shutdown(wait=False, cancel_futures=pool is not self.writes)
        for pool in (self.reads, self.extraction, self.writes):
            for thread in list(getattr(pool, "_threads", ())):
                thread.join(max(0.0, deadline - time.monotonic()))
                ok = ok and not thread.is_alive()
        self.injector.queries.close()
        return ok

    def remove_socket(self) -> None:
        """Remove the socket file, if it is still the one this server bound."""
        try:
            if self._sock_ino is not None and os.stat(self.path).st_ino == self._sock_ino:
                os.unlink(self.path)
        except FileNotFoundError:
            pass

    # ---- background loops
    async def flush_loop(self) -> None:
        assert self.should_exit is not None and self.flush_wakeup is not None
        while not self.should_exit.is_set():
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
            if not self.injector.pending_writes():
                continue  # idle: not even a thread hop
            try:
                await self.in_writer(self.injector.flush)
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

    async def extraction_loop(self) -> None:
        assert self.should_exit is not None and self.extract_wakeup is not None
        if self.pipeline is None:
            return
        while not self.should_exit.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.extract_wakeup.wait(), EXTRACT_POLL_SECONDS)
            self.extract_wakeup.clear()
            if self.should_exit.is_set():
                break
            try:
                done = await self.in_extraction(self.pipeline.process_pending, EXTRACT_BATCH)
            except Exception as exc:
                log.error("extraction failed: %s", exc)
                await asyncio.sleep(min(30.0, self.settings.flush_seconds * 5))
                continue
            self.extraction_runs += 1
            if done:
                cached = self.injector.vectors.cached_projects()
                self.injector.vectors.invalidate()
                # Build the caches again now, off the hook path: the next prompt finds them.
                with contextlib.suppress(RuntimeError):  # the read pool is shutting down
                    asyncio.get_running_loop().run_in_executor(
                        self.reads, self.injector.warm, cached
                    )
                log.info("extracted %d segment(s)", done)
                self.extract_wakeup.set()  # there may be more

    # ---- running work off the loop
    async def in_reader(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.reads, fn, *args)

    async def in_writer(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.writes, fn, *args)

    async def in_extraction(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.extraction, fn, *args)

    # ---- connections
    async def serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn = Connection(asyncio.current_task())
        key = id(conn)
        self.connections[key] = conn
        self.counters["connections"] += 1
        try:
            if not self.peer_allowed(writer):
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
        assert self.should_exit is not None
        while not self.should_exit.is_set():
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

    def peer_allowed(self, writer: asyncio.StreamWriter) -> bool:
        sock = writer.get_extra_info("socket")
        try:
            uid = peer_uid(sock) if sock is not None else None
        except OSError as exc:
            log.warning("cannot read peer credentials: %s", exc)
            return False
        if uid is None:
            return True  # no way to tell on this platform: the 0600 socket still applies
        if uid != os.getuid():
            log.warning("refused a client with uid %d", uid)
            return False
        return True

    async def send(self, writer: asyncio.StreamWriter, reply: Any, hook: bool = False) -> None:
        data = reply if isinstance(reply, bytes) else encode_reply(reply, hook)
        writer.write(data)
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)

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
        handler = getattr(self, f"cmd_{cmd}", None) if isinstance(cmd, str) else None
        if handler is None or not cmd.isidentifier():  # type: ignore[union-attr]
            self.counters["errors"] += 1
            return protocol.error(f"unknown command {cmd!r}"), False
        try:
            inspect.signature(handler).bind(**request)
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

    # ---- commands (thin: they call App, the injector, the pipeline or the scheduler)
    async def cmd_ping(self) -> dict[str, Any]:
        return {"pong": True, "pid": os.getpid(), "version": __version__}

    async def cmd_status(self) -> dict[str, Any]:
        return await self.in_reader(self.status)

    async def call_app(self, name: str, args: dict[str, Any], write: bool) -> dict[str, Any]:
        """Run ``App.<name>(**args)`` in the writer thread (writes) or a read thread."""
        method = getattr(self.app, name)
        try:
            inspect.signature(method).bind(**args)
        except TypeError as exc:
            raise UserError(f"bad arguments for {name}: {exc}") from None
        call = functools.partial(method, **args)
        if not write:
            return await self.in_reader(call)
        try:
            return await self.in_writer(call)
        finally:
            self.injector.vectors.invalidate()

    async def cmd_search(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("search", args, write=False)

    async def cmd_list(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("list", args, write=False)

    async def cmd_show(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("show", args, write=False)

    async def cmd_stats(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("stats", args, write=False)

    async def cmd_find(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("find", args, write=False)

    async def cmd_sessions(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("sessions", args, write=False)

    async def cmd_projects(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("projects", args, write=False)

    async def cmd_edit(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("edit", args, write=True)

    async def cmd_archive(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("archive", args, write=True)

    async def cmd_export(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("export", args, write=False)

    async def cmd_add(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("add", args, write=True)

    async def cmd_forget(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("forget", args, write=True)

    async def cmd_pin(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("pin", args, write=True)

    async def cmd_restore(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("restore", args, write=True)

    async def cmd_import_memories(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("import_memories", args, write=True)

    async def cmd_reindex(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("reindex", args, write=True)

    async def cmd_sync_enable(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("sync_enable", args, write=False)

    async def cmd_sync_disable(self, **args: Any) -> dict[str, Any]:
        return await self.call_app("sync_disable", args, write=False)

    async def cmd_sync_status(self) -> dict[str, Any]:
        return await self.call_app("sync_status", {}, write=False)

    async def cmd_sync_now(self) -> dict[str, Any]:
        """A sync round, off the writer thread (it waits on the network, bounded by
        sync_timeout_seconds; its local writes take the store's write lock)."""
        try:
            return await self.call_app("sync_now", {}, write=False)
        finally:
            self.injector.vectors.invalidate()

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
        result = await self.in_reader(lambda: build(payload, dedupe=False, touch=False))
        return {
            "context": result.text,
            "chosen": result.chosen,
            "left_out": result.left_out,
            "reason": result.reason,
        }

    async def cmd_hook(self, event: str, payload: Any = None) -> dict[str, Any]:
        if event not in HOOK_EVENTS:
            raise UserError(f"unknown hook event {event!r}")
        if not isinstance(payload, dict):
            raise UserError("the hook payload must be a JSON object")
        session_id = str(payload.get("session_id") or "")
        if session_id:
            self.active_sessions[session_id] = time.time()
            while len(self.active_sessions) > 1000:
                self.active_sessions.pop(next(iter(self.active_sessions)))
        if event in ("user-prompt-submit", "session-start"):
            build = (
                self.injector.prompt_context
                if event == "user-prompt-submit"
                else self.injector.session_context
            )
            result = await self.in_reader(self.unless_late, build, payload, time.monotonic())
            return {"context": result.text if result else ""}
        transcript = str(payload.get("transcript_path") or "")
        if event == "stop":
            self.poll_soon(transcript)
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

    def watched(self, transcript: str) -> bool:
        root = os.path.join(os.path.realpath(self.settings.transcripts_dir), "")
        return bool(transcript) and os.path.realpath(transcript).startswith(root)

    def poll_soon(self, transcript: str) -> None:
        """The session is active: have the tailer read its transcript now."""
        if self.tailer is not None and self.watched(transcript):
            self.tailer.enqueue(os.path.realpath(transcript))

    def close_session_soon(self, session_id: str, transcript: str = "") -> None:
        """Queue the session's open segment for extraction; the reply does not wait for it."""
        close_in_pipeline = getattr(self.pipeline, "close_session", None)
        if close_in_pipeline is None and self.tracker is None:
            log.warning("session-end for %s: nothing can close it here", session_id)
            return

        def close() -> None:
            try:
                if close_in_pipeline is not None:
                    close_in_pipeline(session_id)
                    return
                if self.tailer is not None and self.watched(transcript):
                    self.tailer.poll(os.path.realpath(transcript))  # the last lines first
                self.tracker.close_session(session_id, "session-end")
            except Exception as exc:
                log.error("closing session %s failed: %s", session_id, exc)

        future = asyncio.get_running_loop().run_in_executor(self.extraction, close)
        future.add_done_callback(lambda _f: self.wake_extraction())

    def wake_extraction(self) -> None:
        if self.extract_wakeup is not None:
            self.extract_wakeup.set()

    async def cmd_ingest(self, paths: list[str]) -> dict[str, Any]:
        """Read transcripts now, as finished sessions, and extract them (``memd ingest``)."""
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise UserError("ingest needs paths: a list of file or directory paths")
        if self.pipeline is None:
            raise UserError("this daemon runs without extraction; cannot ingest")
        from memd.ingest import run_ingest

        try:
            report = await self.in_extraction(
                lambda: run_ingest(self.pipeline, paths, tracker=self.tracker)
            )
        finally:
            self.injector.vectors.invalidate()
        return dict(report)

    async def cmd_jobs(self) -> dict[str, Any]:
        return {"jobs": self.jobs_status()}

    async def cmd_jobs_run(self, name: str) -> dict[str, Any]:
        if self.scheduler is None:
            raise UserError("the scheduler is not running")
        try:
            result = await self.in_writer(self.scheduler.run, name)
        finally:
            self.injector.vectors.invalidate()
        return result if isinstance(result, dict) else {"name": name, "result": result}

    # ---- status
    def jobs_status(self) -> list[dict[str, Any]]:
        if self.scheduler is None:
            return []
        try:
            return list(self.scheduler.jobs_status())
        except Exception as exc:
            log.warning("jobs status failed: %s", exc)
            return []

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "running": True,
            "version": __version__,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "started_at": self.started_at,
            "uptime_seconds": round(time.time() - self.started_at, 1),
            "socket": str(self.path),
            "home": str(self.settings.home),
            "memories": self.app.store.stats(),
            "embedding_model": self.app.store.embedder.model_id,
            "sessions": self.session_status(),
            "jobs": self.jobs_status(),
            "extractor": self.extractor_status(),
            "requests": dict(self.counters, open=len(self.connections)),
            "injections": {
                "hooks_with_context": self.injector.injections,
                "memories_injected": self.injector.memories_injected,
                "queued_touches": len(self.injector._touch),
                "embedding_batches": self.injector.queries.batches,
                "embedded_queries": self.injector.queries.queries,
                "vector_cache_builds": self.injector.vectors.builds,
            },
            "last_errors": list(self.errors),
        }
        out.update(self.ingest_status())
        out["sync"] = self.sync_status()
        return out

    def sync_status(self) -> dict[str, Any]:
        """What syncs where (`memd status`); never touches the network."""
        try:
            from memd.sync import engine_for

            home = Path(self.settings.home)
            if not self.settings.sync_uri and not (home / "sync").is_dir():
                return {"configured": False}
            return engine_for(self.settings).status()
        except Exception as exc:
            return {"error": str(exc)}

    def session_status(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"pending": 0, "extracted": 0}
        if self.state is not None and hasattr(self.state, "counts"):
            try:
                counts.update(self.state.counts())
            except Exception as exc:
                log.warning("state counts failed: %s", exc)
        counts["active_hooks"] = len(self.active_sessions)
        return counts

    def extractor_status(self) -> dict[str, Any]:
        """The extractor's own counters (``Extractor.stats()``) plus the pipeline's."""
        out: dict[str, Any] = {
            "backend": self.settings.extractor,
            "calls": 0,
            "tokens": 0,
            "failures": 0,
            "fallbacks": 0,
            "budget_exhausted": False,
        }
        try:
            stats = getattr(getattr(self.pipeline, "extractor", None), "stats", None)
            if callable(stats):
                got = dict(stats())
                out.update(got)
                out["tokens"] = int(got.get("tokens_in") or 0) + int(got.get("tokens_out") or 0)
            pipeline = getattr(self.pipeline, "stats", None)
            if isinstance(pipeline, dict):
                out["segments"] = pipeline.get("segments", 0)
                out["memories"] = pipeline.get("memories", 0)
                out["failures"] = max(out["failures"], pipeline.get("failures", 0))
                out["fallbacks"] = max(out["fallbacks"], pipeline.get("fallbacks", 0))
                out["last_error"] = pipeline.get("last_error") or out.get("last_error", "")
            status = getattr(self.pipeline, "status", None)
            if callable(status):
                extra = status()
                out.update(extra.get("extractor", extra) if isinstance(extra, dict) else {})
        except Exception as exc:
            log.warning("extractor status failed: %s", exc)
        return out

    def ingest_status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"watched_files": None, "bytes_ingested": None}
        offsets = getattr(self.state, "offsets", None)
        if callable(offsets):
            try:
                files = offsets()
                out["watched_files"] = len(files)
                out["bytes_ingested"] = sum(int(f.offset) for f in files.values())
            except Exception as exc:
                log.warning("tailer offsets failed: %s", exc)
        out["tailer_running"] = bool(getattr(self.tailer, "started", False))
        out["extraction_lag_seconds"] = self.extraction_lag()
        return out

    def extraction_lag(self) -> float | None:
        """Seconds since the oldest pending segment closed (None when nothing waits)."""
        if self.state is None:
            return None
        oldest = self.state.oldest_pending_closed_at()
        return round(time.time() - oldest, 1) if oldest else None
