"""The daemon's housekeeping: warming the caches at start, the flush loop (hit counters, the
session sets), and giving memory back to the OS (heap trimming, library pages) when idle.

A mixin of :class:`memd.daemon.server.Server`, which owns the state it reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from memd.heap import release_library_pages, trim_heap

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.daemon.core import Workers
    from memd.daemon.pools import Pools
    from memd.recall.inject import Injector
    from memd.settings import Settings
    from memd.state import State

log = logging.getLogger(__name__)

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


class Housekeeping:
    """Warm-up, the flush loop and memory release, for the :class:`Server` that mixes it in."""

    app: App
    settings: Settings
    workers: Workers
    pools: Pools
    injector: Injector
    counters: dict[str, int]
    last_request_at: float
    stopping: asyncio.Event | None
    flush_wakeup: asyncio.Event | None
    flush_sleeping: bool
    extraction_runs: int
    segments_extracted: int
    library_pages: dict[str, int]
    _trimmed: tuple[float, int]
    _released_activity: int
    _heavy_seen: tuple[float, int]
    """When the count of heavy work last changed, and to what."""

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
            keys = self.app.keys
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
        empty polls) once no request has arrived and no such work was done for
        ``RELEASE_IDLE_SECONDS``: once per batch of such work, never for requests alone (the
        first hook after a release faults its code back in)."""
        scheduler = self.workers.scheduler
        heavy = self.segments_extracted + (scheduler.runs if scheduler is not None else 0)
        heavy += self.app.store.embedder.passage_loads  # a `memd add` loaded the float graph
        if heavy == self._released_activity:
            return
        now = time.monotonic()
        if heavy != self._heavy_seen[1]:  # still working (a backfill is one long request):
            self._heavy_seen = (now, heavy)  # a release would only be loaded back
            return
        if now - max(self.last_request_at, self._heavy_seen[0]) < RELEASE_IDLE_SECONDS:
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
