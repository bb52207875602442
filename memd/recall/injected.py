"""Which memories each session was already injected (so none is injected twice in a session):
bounded in memory, persisted in the state database, forgotten after a month without use.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memd.state import State

log = logging.getLogger(__name__)

MAX_SESSIONS = 512
MAX_IDS_PER_SESSION = 2000
STATE_PREFIX = "injected:"
FORGET_AFTER_DAYS = 30
"""Sessions without an injection for this long are forgotten (their dedupe set is dropped)."""
PRUNE_EVERY_SECONDS = 3600


class SessionMemory:
    """Which memory ids each session has already been given. Bounded; persisted via ``State``."""

    def __init__(self, state: State | None = None) -> None:
        self.state = state
        self._sessions: OrderedDict[str, dict[str, None]] = OrderedDict()
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._pruned = 0.0

    @property
    def dirty(self) -> bool:
        """Whether some session's set changed since the last :meth:`persist`."""
        return bool(self._dirty)

    def _ids(self, session_id: str) -> dict[str, None]:
        ids = self._sessions.get(session_id)
        if ids is None:
            ids = dict.fromkeys(self._load(session_id))
            self._sessions[session_id] = ids
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        return ids

    def _load(self, session_id: str) -> list[str]:
        if self.state is None:
            return []
        try:
            raw = self.state.get(STATE_PREFIX + session_id) or {}
            return [str(i) for i in raw.get("ids", [])]
        except Exception as exc:  # state is best effort here: never fail a hook for it
            log.warning("cannot read injected ids of session %s: %s", session_id, exc)
            return []

    def claim(self, session_id: str, ids: Iterable[str]) -> set[str]:
        """The ids not yet given to the session, marked as given now (atomic)."""
        if not session_id:
            return set(ids)
        with self._lock:
            seen = self._ids(session_id)
            fresh = {i for i in ids if i not in seen}
            for i in fresh:
                seen[i] = None
            while len(seen) > MAX_IDS_PER_SESSION:
                del seen[next(iter(seen))]
            if fresh:
                self._dirty.add(session_id)
            return fresh

    def given(self, session_id: str) -> set[str]:
        with self._lock:
            return set(self._ids(session_id)) if session_id else set()

    def reset(self, session_id: str) -> None:
        """The conversation lost its context (clear, compact): everything may be given again."""
        with self._lock:
            self._sessions[session_id] = {}
            self._dirty.add(session_id)

    def persist(self) -> int:
        """Write the changed sessions to state, in one transaction; returns how many."""
        with self._lock:
            dirty = {s: list(self._sessions.get(s, {})) for s in self._dirty}
            self._dirty.clear()
        if self.state is None:
            return 0
        now = time.time()
        try:
            with self.state.transaction():
                for session_id, ids in dirty.items():
                    self.state.set(STATE_PREFIX + session_id, {"ids": ids, "at": now})
                if now - self._pruned > PRUNE_EVERY_SECONDS:
                    self._pruned = now
                    self.prune(now - FORGET_AFTER_DAYS * 86400)
        except Exception as exc:  # best effort: dedupe still works in memory
            log.warning("cannot save the injected ids of %d session(s): %s", len(dirty), exc)
        return len(dirty)

    def prune(self, before: float) -> int:
        """Forget sessions whose last injection is older than ``before`` (a timestamp)."""
        if self.state is None:
            return 0
        old = [
            key
            for key, value in self.state.items(STATE_PREFIX).items()
            if not isinstance(value, dict) or float(value.get("at") or 0) < before
        ]
        for key in old:
            self.state.delete(key)
        return len(old)
