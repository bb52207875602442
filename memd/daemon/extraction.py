"""The daemon's extraction loop: closed segments become memories in the extract pool, and the
recall caches are rebuilt off the hook path after each batch.

A mixin of :class:`memd.daemon.server.Server`, which owns the state it reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memd.daemon.core import Workers
    from memd.daemon.pools import Pools
    from memd.recall.inject import Injector
    from memd.settings import Settings

log = logging.getLogger(__name__)

EXTRACT_BATCH = 2
"""Segments per ``process_pending`` call: shutdown waits for at most one such batch."""
EXTRACT_POLL_SECONDS = 30.0
"""Closed segments wake the extraction loop at once; this poll only catches retries."""


class Extraction:
    """The extraction loop of the :class:`Server` that mixes it in."""

    settings: Settings
    workers: Workers
    pools: Pools
    injector: Injector
    stopping: asyncio.Event | None
    extract_wakeup: asyncio.Event | None
    extraction_runs: int
    segments_extracted: int

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
