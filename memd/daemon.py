"""`memd serve`: the daemon's lifecycle, in the foreground (systemd or launchd supervise it).

Start: take the writer lock (one daemon per MEMD_HOME), open the store, load the model, check
the socket (a stale one is removed only after a connection attempt fails), then start the
session tracker, tailer, pipeline and scheduler, and serve.

Stop (SIGTERM or SIGINT): stop accepting, drain in-flight requests, stop the scheduler and the
tailer, let the current extraction batch finish, flush queued hit counters, checkpoint state,
close the store, and remove the socket file in ``finally``. A second SIGINT exits at once.
Signal handlers only set flags and wake the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections import deque
from pathlib import Path
from types import FrameType
from typing import Any

from memd import dictionary
from memd.heap import use_system_allocator
from memd.server import Server, clear_stale_socket, prepare_socket_dir

log = logging.getLogger("memd.daemon")

POOL_TIMEOUT = 30.0
"""How long shutdown waits for the current extraction batch and queued writes."""
JOBS_TIMEOUT = 30.0


class ErrorRing(logging.Handler):
    """Keeps the last few warnings and errors for `memd status`."""

    def __init__(self, ring: deque[dict[str, Any]]) -> None:
        super().__init__(level=logging.WARNING)
        self.ring = ring

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a log handler must never raise
            self.ring.append(
                {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created)),
                    "level": record.levelname,
                    "logger": record.name,
                    "message": record.getMessage()[:500],
                }
            )


def configure_logging(level: str, ring: deque[dict[str, Any]]) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    logging.getLogger().addHandler(ErrorRing(ring))
    for noisy in ("apscheduler", "watchdog", "urllib3", "httpx", "tzlocal"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def limit_malloc_arenas(arenas: int = 2, mmap_threshold: int = 128 << 10) -> None:
    """Cap glibc's malloc arenas (like MALLOC_ARENA_MAX=2) and fix its mmap threshold at 128 KiB
    (like MALLOC_MMAP_THRESHOLD_), each unless the environment sets it.

    glibc gives threads their own arenas, and memory freed in one is not reused by the others;
    with the daemon's thread pools that kept ~50 MB more RSS at 100k memories. And glibc raises
    its mmap threshold (up to 32 MiB) each time a big block is freed, after which the big
    buffers of loading the model, building the vector cache and scanning the table come from
    the heap, where they leave holes: a fixed threshold maps them and unmaps them on free
    (at 100k memories: peak 533 -> 513 MiB, after searches and hooks 519 -> 512).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        if "MALLOC_ARENA_MAX" not in os.environ:
            libc.mallopt(-8, arenas)  # -8 is M_ARENA_MAX
        if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
            libc.mallopt(-3, mmap_threshold)  # -3 is M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc (musl): nothing to tune
        pass


class Daemon:
    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.errors: deque[dict[str, Any]] = deque(maxlen=10)
        self.should_exit = False
        self.force_exit = False
        self.server: Server | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.app: Any = None
        self.state: Any = None
        self.tracker: Any = None
        self.tailer: Any = None
        self.pipeline: Any = None
        self.scheduler: Any = None
        self.stuck = False
        """Work ignored the shutdown timeout: exit without waiting for its threads."""

    # ---- signals: set flags, wake the loop, nothing else
    def handle_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.should_exit and signum == signal.SIGINT:
            self.force_exit = True
            os._exit(130)
        self.should_exit = True
        if self.loop is not None and self.server is not None:
            self.loop.call_soon_threadsafe(self.server.stop)

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self.handle_signal)
        signal.signal(signal.SIGINT, self.handle_signal)

    # ---- the whole life
    def run(self) -> int:
        """Serve until a signal. Raises LockedError when another daemon holds MEMD_HOME."""
        from memd.app import App

        limit_malloc_arenas()
        use_system_allocator()
        configure_logging(self.settings.log_level, self.errors)
        self.install_signals()
        socket_path = Path(self.settings.socket_path)
        self.app = App(self.settings)
        self.app.open(writer=True, owner="daemon")  # LockedError: another daemon runs
        exit_code = 0
        try:
            prepare_socket_dir(socket_path)
            clear_stale_socket(socket_path)
            started = time.monotonic()
            self.app.store.embedder.load()
            log.info(
                "model %s loaded in %.2f s",
                self.app.store.embedder.model_id,
                time.monotonic() - started,
            )
            dictionary.configure(self.settings.home)  # preloads it if this home met Chinese
            self.start_components()
            self.server = Server(
                self.app,
                self.settings,
                state=self.state,
                pipeline=self.pipeline,
                scheduler=self.scheduler,
                tailer=self.tailer,
                tracker=self.tracker,
                errors=self.errors,
            )
            if not self.should_exit:
                asyncio.run(self.serve())
            exit_code = self.close_components()
        finally:
            try:
                self.app.close()
                if self.state is not None:
                    self.state.close()
            finally:
                if self.server is not None:
                    self.server.remove_socket()
        log.info("memd stopped")
        return exit_code

    async def serve(self) -> None:
        assert self.server is not None
        self.loop = asyncio.get_running_loop()
        await self.server.start()
        if self.tailer is not None:
            # The first scan can take a while on a big history: not on the loop.
            self.loop.run_in_executor(self.server.extraction, self.start_tailer)
        if self.should_exit:  # a signal arrived while starting
            self.server.stop()
        await self.server.serve_until_stopped()

    # ---- components (each guarded: the daemon still serves hooks without them)
    def start_components(self) -> None:
        settings = self.settings
        try:
            from memd.state import State

            self.state = State.open_default(settings.home)
        except Exception as exc:
            log.warning("state is unavailable (%s); tailing and extraction are off", exc)
            return
        try:
            from memd.session import SessionTracker

            self.tracker = SessionTracker(settings, self.state, on_closed=self.segments_closed)
        except Exception as exc:
            log.warning("session tracking is unavailable: %s", exc)
        try:
            from memd.pipeline import Pipeline

            self.pipeline = Pipeline(self.app, self.state, settings)
        except Exception as exc:
            log.warning("extraction is unavailable: %s", exc)
        if self.tracker is not None:
            try:
                from memd.tailer import Tailer

                self.tailer = Tailer(settings, self.state, self.tracker)
            except Exception as exc:
                log.warning("transcript tailing is unavailable: %s", exc)
        try:
            from memd.jobs import Scheduler

            self.scheduler = Scheduler(self.app, self.state, settings)
            self.scheduler.start()
        except Exception as exc:
            log.warning("scheduled jobs are unavailable: %s", exc)
            self.scheduler = None

    def start_tailer(self) -> None:
        try:
            self.tailer.start()
            log.info("watching transcripts in %s", self.settings.transcripts_dir)
        except Exception as exc:
            log.error("the transcript tailer failed to start: %s", exc)

    def segments_closed(self, keys: list[str]) -> None:
        """Called by the tracker (from any thread) when segments became pending."""
        server, loop = self.server, self.loop
        if keys and server is not None and loop is not None and server.extract_wakeup:
            loop.call_soon_threadsafe(server.extract_wakeup.set)

    def close_components(self) -> int:
        """After the server stopped: jobs, tailer, current batch, flush, checkpoint."""
        code = 0
        if self.scheduler is not None and not self.scheduler.shutdown(True, JOBS_TIMEOUT):
            log.error("a maintenance job did not finish in %.0f s", JOBS_TIMEOUT)
            code = 1
        if self.tailer is not None:
            self.tailer.stop()
        if self.server is not None:
            if not self.server.close_pools(POOL_TIMEOUT):
                log.error("work still running after %.0f s; exiting anyway", POOL_TIMEOUT)
                self.stuck = True
                code = 1
            try:
                self.server.injector.flush()
            except Exception as exc:
                log.error("final flush of hit counters failed: %s", exc)
        if self.state is not None:
            try:
                self.state.checkpoint()
            except Exception as exc:
                log.warning("state checkpoint failed: %s", exc)
        return code


def serve(settings: Any) -> int:
    """Run the daemon; 0 after a clean stop. LockedError propagates (exit 3)."""
    daemon = Daemon(settings)
    code = daemon.run()
    if daemon.stuck:  # threads that ignored the timeout would block the interpreter's exit
        sys.stderr.flush()
        os._exit(code)
    return code
