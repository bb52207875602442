"""The daemon's three thread pools, so the event loop only moves bytes: reads (searches, hooks,
status), one writer thread (writes through ``App``, the hit counters) and one extraction thread
(a slow LLM call never holds up ``memd add``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memd.daemon.commands import Pool

T = TypeVar("T")


def compacted_under(exc: BaseException) -> bool:
    """Whether a read failed on a table file that is gone: ``optimize`` drops the files of the
    versions before it, and a read that began on one of those ends with "Not found: .../
    data/....lance" (seen once in ~20 benchmark runs under load)."""
    text = str(exc)
    return "Not found" in text and ".lance" in text


class Pools:
    def __init__(self, read_threads: int = 8) -> None:
        self.by_name: dict[Pool, ThreadPoolExecutor] = {
            "read": ThreadPoolExecutor(read_threads, thread_name_prefix="memd-read"),
            "write": ThreadPoolExecutor(1, thread_name_prefix="memd-write"),
            "extract": ThreadPoolExecutor(1, thread_name_prefix="memd-extract"),
        }

    async def run(self, pool: Pool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in ``pool``, awaited from the loop. A read that lost a race with a
        compaction (it planned over data files the compaction then removed) runs once more."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.by_name[pool], fn, *args)
        except Exception as exc:
            if pool != "read" or not compacted_under(exc):
                raise
            return await loop.run_in_executor(self.by_name[pool], fn, *args)

    def submit(self, pool: Pool, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` in ``pool``, not awaited (best-effort work: warming caches, closing a
        session). Raises RuntimeError once the pool is shutting down."""
        return asyncio.get_running_loop().run_in_executor(self.by_name[pool], fn, *args)

    def close(self, timeout: float) -> bool:
        """Cancel queued reads and extractions, keep queued writes, and wait up to ``timeout``
        for the running ones (the current extraction batch). True when all threads ended."""
        deadline = time.monotonic() + timeout
        order: list[Pool] = ["read", "extract", "write"]
        for name in order:
            self.by_name[name].shutdown(wait=False, cancel_futures=name != "write")
        ok = True
        for name in order:
            for thread in list(getattr(self.by_name[name], "_threads", ())):
                thread.join(max(0.0, deadline - time.monotonic()))
                ok = ok and not thread.is_alive()
        return ok
