"""memd's durable state: one SQLite file at ``$MEMD_HOME/state.db`` (WAL, synchronous=FULL).

It holds what must survive a crash or a restart:

- a JSON key/value table for other modules (job runs, token accounting, injected sets);
- per-file transcript offsets ``(path, inode, offset, size)``;
- every transcript line uuid seen, so resumed or compacted sessions that replay lines add nothing;
- sessions and their segments (``open`` → ``pending`` → ``extracted``, or ``failed`` after
  repeated errors), and the turns of segments not yet extracted.

The tailer commits a read's turns and the file's new offset in one transaction
(:meth:`State.transaction`); a segment turns ``extracted`` only when the pipeline calls
:meth:`State.mark_extracted` after the memories are durably stored.

One connection, guarded by a re-entrant lock: safe to call from any thread of one process.
Other processes (the CLI) may read it concurrently thanks to WAL.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memd.errors import SchemaTooNew, StoreError
from memd.models import Segment, ToolCall, Turn

SEGMENT_STATUSES = ("open", "pending", "extracted", "failed")
MAX_ATTEMPTS = 5
"""Failed extractions after which a segment is ``failed`` (``retry_failed`` re-queues it)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS offsets (
    path TEXT PRIMARY KEY, inode INTEGER NOT NULL, offset INTEGER NOT NULL,
    size INTEGER NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS seen (uuid TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY, project TEXT NOT NULL DEFAULT '', cwd TEXT NOT NULL DEFAULT '',
    next_index INTEGER NOT NULL DEFAULT 0, open_key TEXT NOT NULL DEFAULT '',
    first_user_seen INTEGER NOT NULL DEFAULT 0, ignored TEXT NOT NULL DEFAULT '',
    last_activity REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS segments (
    key TEXT PRIMARY KEY, session_id TEXT NOT NULL, idx INTEGER NOT NULL,
    project TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',
    next_attempt_at REAL NOT NULL DEFAULT 0, turn_count INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL, closed_at REAL, extracted_at REAL);
CREATE INDEX IF NOT EXISTS segments_status ON segments(status, next_attempt_at);
CREATE INDEX IF NOT EXISTS segments_session ON segments(session_id);
CREATE TABLE IF NOT EXISTS turns (
    uuid TEXT PRIMARY KEY, segment_key TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_segment ON turns(segment_key, seq);
CREATE TABLE IF NOT EXISTS ignored_agents (key TEXT PRIMARY KEY, reason TEXT NOT NULL);
"""


STATE_VERSION = 1
"""The state DB's schema version (``PRAGMA user_version``), migrated by :mod:`memd.store.migrations`.

0: turns stored as read (before memd 0.2). 1: turns redacted before they are written, deleted
content zeroed (``secure_delete``).
"""


def check_version(db: sqlite3.Connection, path: Path) -> int:
    """The DB's schema version; a DB from a newer memd is refused before anything is written."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > STATE_VERSION:
        raise SchemaTooNew(
            f"{path} has schema version {version}, but this memd only knows up to "
            f"{STATE_VERSION}: it was written by a newer memd. Upgrade memd (or restore a "
            "backup from $MEMD_HOME/backups); memd leaves the file untouched."
        )
    return version


@dataclass(frozen=True)
class FileOffset:
    """How far a transcript file has been read: bytes up to ``offset`` are consumed."""

    path: str
    inode: int
    offset: int
    size: int


@dataclass
class SessionRecord:
    session_id: str
    project: str = ""
    cwd: str = ""
    next_index: int = 0
    open_key: str = ""
    first_user_seen: bool = False
    ignored: str = ""
    last_activity: float = 0.0


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


class State:
    """Durable state over SQLite. Every method is thread-safe."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists()
            self._db = sqlite3.connect(
                str(self.path), check_same_thread=False, isolation_level=None, timeout=10
            )
            if not existed:
                os.chmod(self.path, 0o600)
            self._db.execute("PRAGMA busy_timeout=10000")
            check_version(self._db, self.path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            # Deleted rows (extracted turns) are overwritten with zeros, in the file and the WAL.
            self._db.execute("PRAGMA secure_delete=ON")
            fresh = not self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'segments'"
            ).fetchone()
            self._db.executescript(_SCHEMA)
            if fresh:
                self._db.execute(f"PRAGMA user_version = {STATE_VERSION}")
        except SchemaTooNew:
            self._db.close()
            raise
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"state database {self.path}: {exc}") from exc

    @classmethod
    def open_default(cls, home: str | os.PathLike[str]) -> State:
        return cls(Path(home) / "state.db")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- transactions

    @contextmanager
    def transaction(self, savepoint: bool = False) -> Iterator[sqlite3.Connection]:
        """One atomic, durable unit of work. Re-entrant: nested calls join the outer one.

        With ``savepoint``, a nested call that fails undoes only its own writes (the outer
        transaction may go on); otherwise a nested failure is the caller's to propagate.
        """
        with self._lock:
            if self._depth:
                name = f"memd_sp{self._depth}"
                if savepoint:
                    self._db.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self._db
                except BaseException:
                    if savepoint:
                        self._db.execute(f"ROLLBACK TO {name}")
                        self._db.execute(f"RELEASE {name}")
                    raise
                else:
                    if savepoint:
                        self._db.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._db
            except BaseException:
                self._depth = 0
                self._db.execute("ROLLBACK")
                raise
            self._depth = 0
            self._db.execute("COMMIT")

    def data_version(self) -> int:
        """Changes when another connection (another process) commits to the database."""
        return int(self._query("PRAGMA data_version")[0][0])

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # --- key/value (JSON values)

    def get(self, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value FROM kv WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set(self, key: str, value: Any) -> None:
        raw = json.dumps(value, ensure_ascii=False)
        with self.transaction() as db:
            db.execute(
                "INSERT INTO kv(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, raw),
            )

    def delete(self, key: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM kv WHERE key = ?", (key,))

    def items(self, prefix: str = "") -> dict[str, Any]:
        rows = self._query(
            "SELECT key, value FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key",
            (len(prefix), prefix),
        )
        return {k: json.loads(v) for k, v in rows}

    # --- file offsets

    def get_offset(self, path: str) -> FileOffset | None:
        rows = self._query("SELECT path, inode, offset, size FROM offsets WHERE path = ?", (path,))
        return FileOffset(*rows[0]) if rows else None

    def set_offset(self, path: str, inode: int, offset: int, size: int) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO offsets(path, inode, offset, size, updated_at) VALUES(?,?,?,?,?) "
                "ON CONFLICT(path) DO UPDATE SET inode = excluded.inode, "
                "offset = excluded.offset, size = excluded.size, updated_at = excluded.updated_at",
                (path, inode, offset, size, time.time()),
            )

    def forget_offset(self, path: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM offsets WHERE path = ?", (path,))

    def offsets(self) -> dict[str, FileOffset]:
        rows = self._query("SELECT path, inode, offset, size FROM offsets")
        return {r[0]: FileOffset(*r) for r in rows}

    # --- seen line uuids

    def seen(self, uuid: str) -> bool:
        return bool(self._query("SELECT 1 FROM seen WHERE uuid = ?", (uuid,)))

    def add_seen(self, uuids: list[str]) -> None:
        with self.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO seen(uuid) VALUES(?)", [(u,) for u in uuids])

    # --- sessions

    def session(self, session_id: str) -> SessionRecord | None:
        rows = self._query(
            "SELECT session_id, project, cwd, next_index, open_key, first_user_seen, ignored, "
            "last_activity FROM sessions WHERE session_id = ?",
            (session_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return SessionRecord(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7])

    def save_session(self, rec: SessionRecord) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sessions(session_id, project, cwd, next_index, open_key, "
                "first_user_seen, ignored, last_activity) VALUES(?,?,?,?,?,?,?,?) "
                "ON CONFLICT(session_id) DO UPDATE SET project = excluded.project, "
                "cwd = excluded.cwd, next_index = excluded.next_index, "
                "open_key = excluded.open_key, first_user_seen = excluded.first_user_seen, "
                "ignored = excluded.ignored, last_activity = excluded.last_activity",
                (
                    rec.session_id,
                    rec.project,
                    rec.cwd,
                    rec.next_index,
                    rec.open_key,
                    int(rec.first_user_seen),
                    rec.ignored,
                    rec.last_activity,
                ),
            )

    def open_sessions(self, idle_before: float | None = None) -> list[str]:
        """Sessions with an open segment (optionally only those idle since ``idle_before``)."""
        if idle_before is None:
            rows = self._query("SELECT session_id FROM sessions WHERE open_key != ''")
        else:
            rows = self._query(
                "SELECT session_id FROM sessions WHERE open_key != '' AND last_activity < ?",
                (idle_before,),
            )
        return [r[0] for r in rows]

    def ignored_agent(self, key: str) -> bool:
        return bool(self._query("SELECT 1 FROM ignored_agents WHERE key = ?", (key,)))

    def ignore_agent(self, key: str, reason: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO ignored_agents(key, reason) VALUES(?, ?)", (key, reason)
            )

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

    def recent_projects(self, limit: int = 5) -> list[str]:
        """The projects of the most recently active sessions, newest first."""
        rows = self._query(
            "SELECT project FROM sessions WHERE project != '' GROUP BY project "
            "ORDER BY max(last_activity) DESC LIMIT ?",
            (limit,),
        )
        return [str(r[0]) for r in rows]

    def counts(self) -> dict[str, int]:
        """Segments by status: ``open``, ``pending``, ``extracted``, ``failed``."""
        out = dict.fromkeys(SEGMENT_STATUSES, 0)
        for status, n in self._query("SELECT status, count(*) FROM segments GROUP BY status"):
            out[status] = n
        return out

    def checkpoint(self) -> None:
        """Fold the WAL into the main file (cheap; the daemon may call it on a schedule)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
