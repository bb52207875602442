"""What a hook event tells the daemon about a session, besides asking for context: which sessions
are active, that a transcript grew (``stop``: the tailer reads it now) and that a session ended
(``session-end``: its open segment is closed and queued for extraction).
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memd.ingest.session import SessionTracker
    from memd.ingest.tailer import Tailer
    from memd.settings import Settings

log = logging.getLogger(__name__)

MAX_ACTIVE = 1000
"""Sessions remembered as active (the oldest are forgotten first)."""


class HookSessions:
    def __init__(
        self, settings: Settings, tailer: Tailer | None, tracker: SessionTracker | None
    ) -> None:
        self.settings = settings
        self.tailer = tailer
        self.tracker = tracker
        self.active: dict[str, float] = {}
        """Session id -> when a hook last came from it (``status``: ``sessions.active_hooks``)."""

    def seen(self, session_id: str) -> None:
        if not session_id:
            return
        self.active.pop(session_id, None)
        self.active[session_id] = time.time()
        while len(self.active) > MAX_ACTIVE:
            self.active.pop(next(iter(self.active)))

    def watched(self, transcript: str) -> bool:
        """True for a transcript under the watched directory (never read anything else)."""
        root = os.path.join(os.path.realpath(self.settings.transcripts_dir), "")
        return bool(transcript) and os.path.realpath(transcript).startswith(root)

    def poll_soon(self, transcript: str) -> None:
        """The session is active: have the tailer read its transcript now."""
        if self.tailer is not None and self.watched(transcript):
            self.tailer.enqueue(os.path.realpath(transcript))

    @property
    def can_close(self) -> bool:
        return self.tracker is not None

    def close(self, session_id: str, transcript: str = "") -> None:
        """Read the transcript's last lines, then close the session's open segment (blocking:
        the daemon runs this in its extraction thread). Errors are logged."""
        if self.tracker is None:
            return
        try:
            if self.tailer is not None and self.watched(transcript):
                self.tailer.poll(os.path.realpath(transcript))  # the last lines first
            self.tracker.close_session(session_id, "session-end")
        except Exception as exc:
            log.error("closing session %s failed: %s", session_id, exc)
