"""Reading a project's memories before a prompt needs them.

A prompt's candidates are ~46 memories, and reading one for the first time (its terms, whether it
is Chinese, the values it states for :mod:`memd.recall.disputed`, its features for
:func:`memd.store.similar.conflict`) costs ~0.5 ms: at 10k memories, most of a hook's time after
its embedding went to texts it had never seen. The daemon reads them ahead, in a thread of
their own, whenever it builds a project's vectors (:class:`memd.recall.vectors.VectorCache`: at
start, after each extraction, on a project's first hook), into the caches the hooks read.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from memd.recall import disputed, retrieve
from memd.store import similar
from memd.text import searchterms

log = logging.getLogger(__name__)

PAUSE = 0.002
"""How often a paused reading looks again whether the hooks are answered."""


def read_text(text: str) -> None:
    """Read ``text`` into the caches a hook reads."""
    retrieve.text_is_chinese(text)
    searchterms.term_set(text)
    disputed.read_ahead(text)
    similar.features(text)


class Reader:
    """One thread that reads the texts of the projects handed to :meth:`submit`, paused while
    a hook is answered (:meth:`hook`). A project built again before its texts were read is
    read once, as last built (a backfill rebuilds one after each write)."""

    def __init__(self) -> None:
        self._pending: dict[str, Any] = {}
        self._wakeup = threading.Condition()
        self._thread: threading.Thread | None = None
        self._hooks = 0
        self._hooks_lock = threading.Lock()
        self.read = 0
        """Texts read so far (repeats included)."""

    @contextlib.contextmanager
    def hook(self) -> Iterator[None]:
        """Around a hook's answer: the reading waits for it."""
        with self._hooks_lock:
            self._hooks += 1
        try:
            yield
        finally:
            with self._hooks_lock:
                self._hooks -= 1

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
                    self._read(column.to_pylist())  # (no more than the caches hold)
                except Exception as exc:  # best effort: a hook reads what is not read here
                    log.warning("reading memories ahead of the hooks failed: %s", exc)

    def _read(self, texts: list[str]) -> None:
        """Read ``texts``; a text read before costs a few cache lookups, so the pass after an
        extraction reads only the new memories for real. After each text the interpreter's
        lock is let go (a hook's thread waits ~0.5 ms for it, not the 5 ms switch interval),
        and while a hook is answered nothing is read."""
        for text in texts:
            read_text(text)
            self.read += 1
            time.sleep(0)
            while self._hooks:
                time.sleep(PAUSE)
