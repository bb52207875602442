"""Where memd is in each transcript: per-file read offsets ``(path, inode, offset, size)``,
every line uuid seen (so resumed or compacted sessions that replay lines add nothing), the
sessions being read, and the subagent transcripts memd ignores."""

from __future__ import annotations

import time
from dataclasses import dataclass

from memd.state.db import Database


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


class Reading(Database):
    """The reading tables of the state database."""

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

    def recent_projects(self, limit: int = 5) -> list[str]:
        """The projects of the most recently active sessions, newest first."""
        rows = self._query(
            "SELECT project FROM sessions WHERE project != '' GROUP BY project "
            "ORDER BY max(last_activity) DESC LIMIT ?",
            (limit,),
        )
        return [str(r[0]) for r in rows]
