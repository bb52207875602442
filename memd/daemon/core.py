"""The App's core: its store and writer lock, the daemon's live workers and recall caches, and
opening and closing them. The commands themselves are mixins of :class:`memd.daemon.app.App`:
:mod:`memd.daemon.reads`, :mod:`memd.daemon.writes` and :mod:`memd.daemon.work`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from memd.errors import StoreError, UserError
from memd.recall import nearest
from memd.recall.queries import QueryBatcher
from memd.recall.readahead import Reader
from memd.recall.vectors import VectorCache
from memd.settings import Settings
from memd.store import rebuild
from memd.store.keyindex import KeyIndex
from memd.store.lock import WriterLock
from memd.store.table import MemoryStore

if TYPE_CHECKING:
    from memd.daemon.jobs import Scheduler
    from memd.daemon.pipeline import Pipeline
    from memd.ingest.session import SessionTracker
    from memd.ingest.tailer import Tailer
    from memd.state import State
    from memd.store.upsert import Near

log = logging.getLogger(__name__)


@dataclass
class Workers:
    """The daemon's live components (each None when it failed to start). ``App`` uses them for
    ``ingest`` and ``jobs`` inside the daemon; a one-shot CLI has none and makes its own."""

    state: State | None = None
    tracker: SessionTracker | None = None
    pipeline: Pipeline | None = None
    tailer: Tailer | None = None
    scheduler: Scheduler | None = None


class AppCore:
    """The store, the lock and the caches every command of :class:`memd.daemon.app.App` uses."""

    def __init__(
        self, settings: Settings, store: MemoryStore | None = None, *, resident: bool = False
    ) -> None:
        self.settings = settings
        self.resident = resident
        """True in the daemon: the model stays loaded, and the store keeps every memory's list
        keys and counts in memory (:mod:`memd.store.keyindex`) and finds an insert's neighbours
        in the recall's vector cache (:mod:`memd.recall.nearest`). A one-shot command reads the
        table instead, and may drop the model once it has no more texts to embed (a bulk
        import before its final optimize: ~64 MiB less peak)."""
        self._recall: tuple[VectorCache, QueryBatcher] | None = None
        """The in-memory vectors and the query embedder every recall shares (the daemon's;
        a one-shot CLI builds them only when it recalls, as building costs more than one query)."""
        self.reader = Reader()
        """Reads the memories of each project the daemon's vector cache builds, ahead of the
        hooks (:mod:`memd.recall.readahead`)."""
        near = self._cache_neighbours if resident else None
        self.store = store or MemoryStore(settings, keep_keys=resident, near=near)
        self.lock = WriterLock(settings.home)
        self.writer = False
        self.workers: Workers | None = None
        """Set by the daemon (:class:`Workers`); None in a one-shot CLI."""

    def recall_cache(self) -> tuple[VectorCache, QueryBatcher]:
        """The vector cache and the query batcher, made on first use."""
        if self._recall is None:
            self._recall = (
                VectorCache(self.store),
                QueryBatcher(self.store.embedder.embed_queries),
            )
        return self._recall

    def _cache_neighbours(self, store: MemoryStore) -> Near:
        """The resident store's neighbour search: the recall's vector cache for ``store``."""
        cache = VectorCache(store, on_build=self.reader.submit)
        self._recall = (cache, QueryBatcher(store.embedder.embed_queries))
        return functools.partial(nearest.nearest_ids, cache)

    @property
    def keys(self) -> KeyIndex:
        """The resident store's key index (:mod:`memd.store.keyindex`)."""
        if self.store.keys is None:
            raise UserError("the key index is the daemon's: this App is not resident")
        return self.store.keys

    def open(self, *, writer: bool, owner: str = "cli", check_model: bool = True) -> Self:
        if writer:
            self.lock.acquire(owner)
            self.writer = True
        try:
            if writer:  # under the writer lock: at daemon start, or a one-shot writer
                from memd.store.migrations import migrate

                migrate(self.settings)
            # The daemon migrates a store written with another model (e.g. the previous
            # default) instead of refusing to start; other processes only check.
            remodel = writer and owner == "daemon"
            self.store.open(check_model=check_model and not remodel)
            if remodel:
                rebuild.migrate_model(self.store)
        except BaseException:
            self.lock.release()
            raise
        return self

    def close(self) -> None:
        if self._recall is not None:
            self._recall[1].close()
        self.store.close()
        self.lock.release()

    def _need_writer(self) -> None:
        if not self.writer:
            raise StoreError("this process does not hold the writer lock")

    @property
    def via(self) -> str:
        """Where a command runs: ``daemon`` or ``local`` (a one-shot CLI)."""
        return "daemon" if self.workers is not None else "local"

    @contextlib.contextmanager
    def _state(self) -> Iterator[State]:
        """The daemon's state, or memd's state opened for this one call (a one-shot CLI)."""
        if self.workers is not None:
            if self.workers.state is None:
                raise UserError("this daemon runs without its state; see `memd status`")
            yield self.workers.state
            return
        from memd.state import State

        state = State.open_default(self.settings.home)
        try:
            yield state
        finally:
            state.close()
