"""Reading a project's memories before a prompt needs them.

A prompt's candidates are ~46 memories, and reading one for the first time (its terms, whether it
is Chinese, the values it states for :mod:`memd.recall.disputed`, its features for
:func:`memd.store.similar.conflict`) costs ~0.5 ms: at 10k memories, most of a hook's time after
its embedding went to texts it had never seen. The daemon reads them ahead, in a thread of
their own, whenever it builds a project's vectors (:class:`memd.recall.vectors.VectorCache`: at
start, after each extraction, on a project's first hook), into the caches the hooks read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from memd.recall import disputed, retrieve
from memd.store import similar
from memd.text import TEXT_CACHE, searchterms

log = logging.getLogger(__name__)

BUSY = 0.02
PAUSE = 0.002
"""After each ``BUSY`` seconds of reading, a pause, so that a hook arriving meanwhile waits for
the interpreter's lock no longer than that."""


def read_ahead(texts: Iterable[str], limit: int = TEXT_CACHE) -> int:
    """Read up to ``limit`` of ``texts`` into the recall's caches; the number read. A text
    already read costs a few cache lookups, so the pass after an extraction reads only the new
    memories for real."""
    read = 0
    since = time.perf_counter()
    for text in texts:
        if read >= limit:
            break
        retrieve.text_is_chinese(text)
        searchterms.term_set(text)
        disputed.read_ahead(text)
        similar.features(text)
        read += 1
        if time.perf_counter() - since > BUSY:
            time.sleep(PAUSE)
            since = time.perf_counter()
    return read


class Reader:
    """One thread that reads the texts of the projects handed to :meth:`submit`. A project
    built again before its texts were read is read once, as last built (a backfill rebuilds
    one after each write)."""

    def __init__(self) -> None:
        self._pending: dict[str, Any] = {}
        self._wakeup = threading.Condition()
        self._thread: threading.Thread | None = None
        self.read = 0
        """Texts read so far (repeats included)."""

    def submit(self, project: str, rows: Any) -> None:
        """Read the ``text`` column of ``rows`` (the Arrow table of a project's vector cache
        entry) soon. Cheap: the column is turned into strings in the thread."""
        with self._wakeup:
            self._pending[project] = rows.column("text")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memd-readahead", daemon=True
                )
                self._thread.start()
            self._wakeup.notify()

    def _run(self) -> None:
        while True:
            with self._wakeup:
                while not self._pending:
                    self._wakeup.wait()
                pending, self._pending = self._pending, {}
            for column in pending.values():
                try:
                    self.read += read_ahead(column.to_pylist())
                except Exception as exc:  # best effort: a hook reads what is not read here
                    log.warning("reading memories ahead of the hooks failed: %s", exc)
