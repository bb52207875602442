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
from types import FrameType
from typing import TYPE_CHECKING, Any

from memd.daemon.app import App
from memd.daemon.core import Workers
from memd.daemon.server import Server
from memd.daemon.unixsocket import SocketFile
from memd.heap import use_system_allocator
from memd.text import dictionary

if TYPE_CHECKING:
    from memd.ingest.tailer import Tailer
    from memd.settings import Settings

log = logging.getLogger("memd.daemon.lifecycle")

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
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.errors: deque[dict[str, Any]] = deque(maxlen=10)
        self.stop_requested = False
        """A signal asked the daemon to stop (the handler also wakes the server's loop)."""
        self.server: Server | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.workers = Workers()
        self.stuck = False
        """Work ignored the shutdown timeout: exit without waiting for its threads."""

    # ---- signals: set flags, wake the loop, nothing else
    def handle_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_requested and signum == signal.SIGINT:
            os._exit(130)
        self.stop_requested = True
        if self.loop is not None and self.server is not None:
            self.loop.call_soon_threadsafe(self.server.stop)

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self.handle_signal)
        signal.signal(signal.SIGINT, self.handle_signal)

    # ---- the whole life
    def run(self) -> int:
        """Serve until a signal. Raises LockedError when another daemon holds MEMD_HOME."""
        limit_malloc_arenas()
        use_system_allocator()
        configure_logging(self.settings.log_level, self.errors)
        self.install_signals()
        socket_file = SocketFile(self.settings.socket_path)
        app = App(self.settings, resident=True)
        app.open(writer=True, owner="daemon")  # LockedError: another daemon runs
        exit_code = 0
        try:
            socket_file.prepare()
            started = time.monotonic()
            app.store.embedder.load()
            log.info(
                "model %s loaded in %.2f s",
                app.store.embedder.model_id,
                time.monotonic() - started,
            )
            dictionary.configure(self.settings.home)  # preloads it if this home met Chinese
            self.start_components(app)
            self.server = Server(
                app, self.settings, self.workers, socket=socket_file, errors=self.errors
            )
            if not self.stop_requested:
                asyncio.run(self.serve(self.server))
            exit_code = self.close_components(self.server)
        finally:
            try:
                app.close()
                if self.workers.state is not None:
                    self.workers.state.close()
            finally:
                socket_file.remove()
        log.info("memd stopped")
        return exit_code

    async def serve(self, server: Server) -> None:
        self.loop = asyncio.get_running_loop()
        await server.start()
        if self.workers.tailer is not None:
            # The first scan can take a while on a big history: not on the loop.
            server.pools.submit("extract", self.start_tailer, self.workers.tailer)
        if self.stop_requested:  # a signal arrived while starting
            server.stop()
        await server.serve_until_stopped()

    # ---- components (each guarded: the daemon still serves hooks without them)
    def start_components(self, app: App) -> None:
        settings, workers = self.settings, self.workers
        try:
            from memd.state import State

            workers.state = State.open_default(settings.home)
        except Exception as exc:
            log.warning("state is unavailable (%s); tailing and extraction are off", exc)
            return
        try:
            from memd.ingest.session import SessionTracker

            workers.tracker = SessionTracker(
                settings, workers.state, on_closed=self.segments_closed
            )
        except Exception as exc:
            log.warning("session tracking is unavailable: %s", exc)
        try:
            from memd.daemon.pipeline import Pipeline

            workers.pipeline = Pipeline(app, workers.state, settings)
        except Exception as exc:
            log.warning("extraction is unavailable: %s", exc)
        if workers.tracker is not None:
            try:
                from memd.ingest.tailer import Tailer

                workers.tailer = Tailer(settings, workers.state, workers.tracker)
            except Exception as exc:
                log.warning("transcript tailing is unavailable: %s", exc)
        try:
            from memd.daemon.jobs import Scheduler

            scheduler = Scheduler(app, workers.state, settings)
            scheduler.start()
            workers.scheduler = scheduler
        except Exception as exc:
            log.warning("scheduled jobs are unavailable: %s", exc)

    def start_tailer(self, tailer: Tailer) -> None:
        try:
            tailer.start()
            log.info("watching transcripts in %s", self.settings.transcripts_dir)
        except Exception as exc:
            log.error("the transcript tailer failed to start: %s", exc)
            return
        self.backfill_history()

    def backfill_history(self) -> None:
        """Backfill the transcripts that were on disk at the very first start (queued by the
        tailer, or left unfinished by a stop), as finished sessions, with their progress in
        state for ``memd status`` and the UI. Runs in the extraction thread."""
        from memd.daemon.ingest import run_ingest
        from memd.ingest.tailer import HISTORY_KEY

        state, pipeline, tracker = self.workers.state, self.workers.pipeline, self.workers.tracker
        if state is None or pipeline is None or tracker is None:
            return
        job = state.get(HISTORY_KEY)
        if not isinstance(job, dict) or job.get("state") not in ("queued", "running"):
            return
        paths = [p for p in job.get("paths") or [] if os.path.exists(p)]
        base = {"files_total": job.get("files_total", len(paths)), "started_at": time.time()}
        state.set(HISTORY_KEY, {**job, **base, "state": "running"})
        log.info("backfilling %d transcript file(s) found at the first start", len(paths))

        current: dict[str, Any] = {**job, **base, "state": "running"}

        def progress(update: dict[str, Any]) -> None:
            if self.stop_requested:
                raise InterruptedError("stopping")
            current.update(update)
            state.set(HISTORY_KEY, current)

        try:
            result = run_ingest(pipeline, paths, progress, tracker) if paths else {}
        except InterruptedError:
            return  # resumed at the next start: uuid dedupe makes the second read cheap
        except Exception as exc:
            log.error("backfilling the existing transcripts failed: %s", exc)
            state.set(HISTORY_KEY, {**base, "state": "failed", "error": str(exc)[:300]})
            return
        state.set(HISTORY_KEY, {**base, **result, "state": "done", "finished_at": time.time()})
        log.info(
            "backfill done: %s memories from %d file(s)", result.get("memories_added"), len(paths)
        )

    def segments_closed(self, keys: list[str]) -> None:
        """Called by the tracker (from any thread) when segments became pending."""
        server, loop = self.server, self.loop
        if keys and server is not None and loop is not None:
            loop.call_soon_threadsafe(server.wake_extraction)

    def close_components(self, server: Server) -> int:
        """After the server stopped: jobs, tailer, current batch, flush, checkpoint."""
        code = 0
        workers = self.workers
        if workers.scheduler is not None and not workers.scheduler.shutdown(True, JOBS_TIMEOUT):
            log.error("a maintenance job did not finish in %.0f s", JOBS_TIMEOUT)
            code = 1
        if workers.tailer is not None:
            workers.tailer.stop()
        if not server.close_pools(POOL_TIMEOUT):
            log.error("work still running after %.0f s; exiting anyway", POOL_TIMEOUT)
            self.stuck = True
            code = 1
        try:
            server.injector.flush()
        except Exception as exc:
            log.error("final flush of hit counters failed: %s", exc)
        if workers.state is not None:
            try:
                workers.state.checkpoint()
            except Exception as exc:
                log.warning("state checkpoint failed: %s", exc)
        return code


def serve(settings: Settings) -> int:
    """Run the daemon; 0 after a clean stop. LockedError propagates (exit 3)."""
    daemon = Daemon(settings)
    code = daemon.run()
    if daemon.stuck:  # threads that ignored the timeout would block the interpreter's exit
        sys.stderr.flush()
        os._exit(code)
    return code
