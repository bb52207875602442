"""Turns → sessions → segments ready for extraction.

Turns are grouped by ``sessionId``; subagent files carry their parent's sessionId, so their turns
join the parent session. A session's open segment closes (``open`` → ``pending``) on:

- ``close_session(session_id, "session-end")`` (the SessionEnd hook),
- ``close_idle(now)`` after ``settings.session_idle_seconds`` without new lines,
- a compaction boundary in the transcript,
- the size cap ``settings.segment_max_turns``,
- ``close_session(..., "ingest")`` at the end of a backfill.

Everything lives in :class:`memd.state.State`, written inside the caller's transaction, so a read's
turns and its file offset commit together. Line uuids already seen are skipped (``--resume`` and
compaction replay lines). Not ingested: memd's own extraction runs (first user text starts with
:data:`MEMD_EXTRACTION_PROMPT_MARKER`), the compaction summarizer (``acompact`` agents) and
"Warmup" sidechains.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from memd.extract.prompt import MEMD_EXTRACTION_PROMPT_MARKER as MEMD_EXTRACTION_PROMPT_MARKER
from memd.ingest.transcript import ParsedLine, Signal, fold, has_content
from memd.models import Segment, Turn
from memd.project import session_project
from memd.settings import Settings
from memd.state import SessionRecord, State

COMPACTION_AGENT_PREFIX = "acompact"


@dataclass
class FeedResult:
    """What one feed did: turns added or grown, segments closed, lines dropped as duplicates."""

    turns: int = 0
    duplicates: int = 0
    closed: list[str] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)


@dataclass
class _Open:
    """The in-memory mirror of a session's open segment."""

    key: str
    index: int
    turns: list[Turn]


class SessionTracker:
    """Segments sessions durably. Thread-safe: hold :attr:`lock` around multi-step work."""

    def __init__(
        self,
        settings: Settings,
        state: State,
        clock: Callable[[], float] = time.time,
        on_closed: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.clock = clock
        self.on_closed = on_closed
        """Called (outside the lock, after commit) with keys of segments that became pending."""
        self.lock = threading.RLock()
        self._open: dict[str, _Open | None] = {}
        self._sessions: dict[str, SessionRecord] = {}
        self._data_version = -1

    # --- feeding

    def feed(
        self,
        items: Iterable[ParsedLine],
        commit: Callable[[], None] | None = None,
        close: Iterable[str] = (),
        close_reason: str = "ingest",
    ) -> FeedResult:
        """Add parsed lines in one transaction.

        ``commit`` runs inside that transaction (e.g. to save the file offset); sessions in
        ``close`` are closed with ``close_reason`` in it too (backfill: every session finished).
        """
        result = FeedResult()
        with self.lock:
            try:
                with self.state.transaction(savepoint=True):
                    self._trim_cache()
                    for item in items:
                        self._feed_one(item, result)
                    for sid in result.sessions:
                        self.state.save_session(self._session(sid))
                    for sid in close:
                        key = self._close(self._session(sid), close_reason)
                        if key and key not in result.closed:
                            result.closed.append(key)
                    if commit is not None:
                        commit()
            except BaseException:
                self._forget_cache()
                raise
        self._notify(result.closed)
        return result

    def _feed_one(self, item: ParsedLine, result: FeedResult) -> None:
        state = self.state
        if not item.session_id:
            return
        fresh = [u for u in (item.uuids or [item.uuid]) if not state.seen(u)]
        if not fresh:
            result.duplicates += 1
            return
        state.add_seen(fresh)
        rec = self._session(item.session_id)
        if rec.ignored:
            return
        now = self.clock()
        if isinstance(item, Signal):
            if item.kind == "compaction" and not item.is_sidechain:
                key = self._close(rec, "compaction")
                if key:
                    result.closed.append(key)
            return
        turn = item
        if turn.agent_id.startswith(COMPACTION_AGENT_PREFIX):
            return
        agent_key = f"{turn.session_id}/{turn.agent_id}" if turn.is_sidechain else ""
        if agent_key and state.ignored_agent(agent_key):
            return
        if turn.role == "user" and not turn.is_sidechain and not rec.first_user_seen:
            rec.first_user_seen = True
            if turn.text.lstrip().startswith(MEMD_EXTRACTION_PROMPT_MARKER):
                self._ignore_session(rec, "memd-extraction")
                return
        if agent_key and turn.role == "user" and turn.text.strip() == "Warmup":
            state.ignore_agent(agent_key, "warmup")
            return
        if turn.cwd and (not turn.is_sidechain or not rec.cwd):
            rec.cwd = turn.cwd
        cap = self.settings.segment_max_turns
        seg = self._load_open(rec)
        if seg is not None and turn.role == "user" and len(seg.turns) >= cap:
            # Close before a new prompt, so a prompt and its answer stay together.
            key = self._close(rec, "size-cap")
            if key:
                result.closed.append(key)
        seg = self._open_segment(rec, turn)
        turn.uuids = [u for u in turn.uuids if u in fresh] or [turn.uuid]
        before = len(seg.turns)
        target = fold(seg.turns, turn)
        if len(seg.turns) > before:
            seq = before
        else:
            seq = next(i for i, t in enumerate(seg.turns) if t is target)
        state.put_turn(seg.key, seq, target, self.settings.redact_patterns)
        rec.last_activity = now
        result.turns += 1
        result.sessions.add(rec.session_id)
        if len(seg.turns) >= cap + max(10, cap // 4):
            # Hard cap: a runaway assistant loop with no new prompt.
            key = self._close(rec, "size-cap")
            if key:
                result.closed.append(key)

    # --- closing

    def close_session(self, session_id: str, reason: str = "session-end") -> str | None:
        """Close the session's open segment; returns its key (now pending) or None."""
        with self.lock:
            try:
                with self.state.transaction(savepoint=True):
                    self._trim_cache()
                    rec = self._session(session_id)
                    key = self._close(rec, reason)
            except BaseException:
                self._forget_cache()
                raise
        self._notify([key] if key else [])
        return key

    def close_idle(self, now: float | None = None) -> list[str]:
        """Close segments with no new lines for ``settings.session_idle_seconds``."""
        now = self.clock() if now is None else now
        cutoff = now - self.settings.session_idle_seconds
        with self.lock:
            return self.close_sessions(self.state.open_sessions(idle_before=cutoff), "idle")

    def close_sessions(self, session_ids: Iterable[str], reason: str) -> list[str]:
        """Close several sessions' open segments in one transaction."""
        closed: list[str] = []
        with self.lock:
            try:
                with self.state.transaction(savepoint=True):
                    self._trim_cache()
                    for sid in session_ids:
                        key = self._close(self._session(sid), reason)
                        if key:
                            closed.append(key)
            except BaseException:
                self._forget_cache()
                raise
        self._notify(closed)
        return closed

    def open_turns(self, session_id: str) -> list[Turn]:
        """The turns of a session's open segment (what is visible before extraction)."""
        with self.lock:
            self._trim_cache()
            seg = self._load_open(self._session(session_id))
            return list(seg.turns) if seg else []

    # --- internals

    def _session(self, session_id: str) -> SessionRecord:
        rec = self._sessions.get(session_id)
        if rec is None:
            rec = self.state.session(session_id) or SessionRecord(session_id)
            self._sessions[session_id] = rec
        return rec

    def _trim_cache(self) -> None:
        """Bound the caches between operations; state is the truth.

        Another process writing the same state (``memd ingest`` while no daemon answered)
        also invalidates them.
        """
        version = self.state.data_version()
        if len(self._sessions) > 2048 or version != self._data_version:
            self._forget_cache()
            self._data_version = version

    def _load_open(self, rec: SessionRecord) -> _Open | None:
        if rec.session_id in self._open:
            return self._open[rec.session_id]
        seg = None
        if rec.open_key:
            info = self.state.segment_info(rec.open_key)
            if info and info["status"] == "open":
                seg = _Open(rec.open_key, info["idx"], self.state.segment_turns(rec.open_key))
            else:
                rec.open_key = ""
        self._open[rec.session_id] = seg
        return seg

    def _open_segment(self, rec: SessionRecord, first: Turn) -> _Open:
        seg = self._load_open(rec)
        if seg is not None:
            return seg
        index = rec.next_index
        key = Segment(rec.session_id, "", [first], index=index).key
        self.state.create_segment(key, rec.session_id, index, self._project(rec, [first]))
        rec.next_index = index + 1
        rec.open_key = key
        self.state.save_session(rec)
        seg = _Open(key, index, [])
        self._open[rec.session_id] = seg
        return seg

    def _close(self, rec: SessionRecord, reason: str) -> str | None:
        seg = self._load_open(rec)
        if seg is None:
            return None
        keep = []
        for t in seg.turns:
            if has_content(t):
                keep.append(t)
            else:
                self.state.delete_turn(t.uuid)
        self.state.close_segment(seg.key, reason, self._project(rec, keep), len(keep))
        rec.open_key = ""
        self.state.save_session(rec)
        self._open[rec.session_id] = None
        return seg.key if keep else None

    def _project(self, rec: SessionRecord, turns: list[Turn]) -> str:
        cwd = next((t.cwd for t in turns if t.cwd and not t.is_sidechain), "")
        cwd = cwd or rec.cwd or next((t.cwd for t in turns if t.cwd), "")
        project = session_project(cwd) if cwd else ""
        if project:
            rec.project = project
        return project or rec.project

    def _ignore_session(self, rec: SessionRecord, reason: str) -> None:
        seg = self._load_open(rec)
        if seg is not None:
            self.state.drop_segment(seg.key)
        rec.open_key = ""
        rec.ignored = reason
        self._open[rec.session_id] = None
        self.state.save_session(rec)

    def _forget_cache(self) -> None:
        self._open.clear()
        self._sessions.clear()

    def _notify(self, keys: list[str]) -> None:
        if keys and self.on_closed is not None:
            self.on_closed(keys)
