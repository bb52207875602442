"""The extraction queue: segments of a session (``open`` → ``pending`` → ``extracted``, or
``failed`` after repeated errors) and the turns of those not yet extracted, redacted before
they reach the disk.

A segment turns ``extracted`` only when the pipeline calls :meth:`Segments.mark_extracted`
after its memories are durably stored; its turns are deleted then (zeroed on disk:
``secure_delete``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from memd.models import Segment, ToolCall, Turn
from memd.state.db import Database

SEGMENT_STATUSES = ("open", "pending", "extracted", "failed")
MAX_ATTEMPTS = 5
"""Failed extractions after which a segment is ``failed`` (``retry_failed`` re-queues it)."""


def redacted(turn: Turn, patterns: tuple[str, ...] = ()) -> Turn:
    """:func:`memd.extract.redact.redact_turn`, remembering recent strings: a turn that grows
    (streamed lines, tool results folded in) is written again and again with mostly the same
    pieces."""
    from memd.extract.redact import redact_turn

    return redact_turn(turn, patterns, remember=True)


def turn_to_json(turn: Turn) -> str:
    return json.dumps(asdict(turn), ensure_ascii=False, separators=(",", ":"))


def turn_from_json(raw: str) -> Turn:
    d = json.loads(raw)
    d["tools"] = [ToolCall(**t) for t in d.get("tools") or []]
    known = {k: v for k, v in d.items() if k in Turn.__dataclass_fields__}
    return Turn(**known)


class Segments(Database):
    """The extraction queue's tables of the state database."""

    # --- segments and their turns

    def create_segment(self, key: str, session_id: str, index: int, project: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO segments(key, session_id, idx, project, status, created_at) "
                "VALUES(?,?,?,?,'open',?)",
                (key, session_id, index, project, time.time()),
            )

    def put_turn(
        self, segment_key: str, seq: int, turn: Turn, redact_patterns: Iterable[str] = ()
    ) -> None:
        """Insert or replace one turn of an open segment (a grown turn is written again).

        The turn is redacted first (with ``redact_patterns`` on top of the built-in rules):
        a pending session's turns may sit here for hours, and no secret may reach the disk.
        """
        data = turn_to_json(redacted(turn, tuple(redact_patterns)))
        with self.transaction() as db:
            db.execute(
                "INSERT INTO turns(uuid, segment_key, seq, data) VALUES(?,?,?,?) "
                "ON CONFLICT(uuid) DO UPDATE SET data = excluded.data",
                (turn.uuid, segment_key, seq, data),
            )

    def delete_turn(self, uuid: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM turns WHERE uuid = ?", (uuid,))

    def segment_turns(self, key: str) -> list[Turn]:
        rows = self._query("SELECT data FROM turns WHERE segment_key = ? ORDER BY seq", (key,))
        return [turn_from_json(r[0]) for r in rows]

    def close_segment(self, key: str, reason: str, project: str, turn_count: int) -> None:
        """``open`` → ``pending`` (or drop an empty segment)."""
        with self.transaction() as db:
            if turn_count == 0:
                db.execute("DELETE FROM turns WHERE segment_key = ?", (key,))
                db.execute("DELETE FROM segments WHERE key = ? AND status = 'open'", (key,))
                return
            db.execute(
                "UPDATE segments SET status = 'pending', reason = ?, project = ?, "
                "turn_count = ?, closed_at = ? WHERE key = ? AND status = 'open'",
                (reason, project, turn_count, time.time(), key),
            )

    def drop_segment(self, key: str) -> None:
        """Forget an open segment and its turns (a session memd must not ingest)."""
        with self.transaction() as db:
            db.execute("DELETE FROM turns WHERE segment_key = ?", (key,))
            db.execute("DELETE FROM segments WHERE key = ?", (key,))

    def segment(self, key: str) -> Segment | None:
        rows = self._query(
            "SELECT key, session_id, idx, project, reason FROM segments WHERE key = ?", (key,)
        )
        if not rows:
            return None
        k, sid, idx, project, reason = rows[0]
        return Segment(sid, project, self.segment_turns(k), index=idx, reason=reason, key=k)

    def segment_info(self, key: str) -> dict[str, Any] | None:
        """Status, reason, attempts, last_error and times of one segment."""
        with self._lock:
            cur = self._db.execute("SELECT * FROM segments WHERE key = ?", (key,))
            row = cur.fetchone()
            if row is None:
                return None
            return dict(zip([c[0] for c in cur.description], row, strict=True))

    def segments(self, status: str | None = None, session_id: str | None = None) -> list[str]:
        """Segment keys, oldest first, optionally filtered by status and session."""
        sql, args = "SELECT key FROM segments WHERE 1=1", []
        if status:
            sql += " AND status = ?"
            args.append(status)
        if session_id:
            sql += " AND session_id = ?"
            args.append(session_id)
        return [r[0] for r in self._query(sql + " ORDER BY created_at, idx", tuple(args))]

    def pending_segments(self, limit: int = 10, now: float | None = None) -> list[Segment]:
        """Closed segments due for extraction (failed ones wait for their backoff), oldest first."""
        now = time.time() if now is None else now
        rows = self._query(
            "SELECT key, session_id, idx, project, reason FROM segments "
            "WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY closed_at, idx LIMIT ?",
            (now, limit),
        )
        return [
            Segment(sid, project, self.segment_turns(k), index=idx, reason=reason, key=k)
            for k, sid, idx, project, reason in rows
        ]

    def claim_segments(
        self, limit: int = 10, lease_seconds: float = 900.0, now: float | None = None
    ) -> list[Segment]:
        """Like :meth:`pending_segments`, but leases them so no other worker gets them meanwhile.

        The lease ends with :meth:`mark_extracted` or :meth:`mark_failed`; after a crash it
        simply expires and the segments are due again.
        """
        now = time.time() if now is None else now
        with self.transaction():
            segments = self.pending_segments(limit, now)
            self._db.executemany(
                "UPDATE segments SET next_attempt_at = ? WHERE key = ?",
                [(now + lease_seconds, s.key) for s in segments],
            )
        return segments

    def mark_extracted(self, key: str) -> None:
        """Call after the segment's memories are durably stored. Drops its turns."""
        with self.transaction() as db:
            db.execute(
                "UPDATE segments SET status = 'extracted', extracted_at = ?, last_error = '' "
                "WHERE key = ?",
                (time.time(), key),
            )
            db.execute("DELETE FROM turns WHERE segment_key = ?", (key,))

    def mark_failed(self, key: str, error: str, max_attempts: int = MAX_ATTEMPTS) -> None:
        """Record a failed extraction: retried later with backoff, ``failed`` after max_attempts."""
        from memd.extract.redact import redact

        error = redact(error)  # an LLM's error may quote the prompt
        with self.transaction() as db:
            row = db.execute("SELECT attempts FROM segments WHERE key = ?", (key,)).fetchone()
            if row is None:
                return
            attempts = row[0] + 1
            status = "failed" if attempts >= max_attempts else "pending"
            delay = min(3600.0, 30.0 * 2 ** (attempts - 1))
            db.execute(
                "UPDATE segments SET attempts = ?, last_error = ?, status = ?, "
                "next_attempt_at = ? WHERE key = ? AND status IN ('pending', 'failed')",
                (attempts, error[:2000], status, time.time() + delay, key),
            )

    def retry_failed(self) -> int:
        """Queue every ``failed`` segment again; returns how many."""
        with self.transaction() as db:
            cur = db.execute(
                "UPDATE segments SET status = 'pending', attempts = 0, next_attempt_at = 0 "
                "WHERE status = 'failed'"
            )
            return cur.rowcount

    def oldest_pending_closed_at(self) -> float | None:
        """When the oldest segment still waiting for extraction closed (None: nothing waits)."""
        rows = self._query("SELECT min(closed_at) FROM segments WHERE status = 'pending'")
        return float(rows[0][0]) if rows and rows[0][0] else None

    def counts(self) -> dict[str, int]:
        """Segments by status: ``open``, ``pending``, ``extracted``, ``failed``."""
        out = dict.fromkeys(SEGMENT_STATUSES, 0)
        for status, n in self._query("SELECT status, count(*) FROM segments GROUP BY status"):
            out[status] = n
        return out
