"""This device's sync bookkeeping: its id (``$MEMD_HOME/device_id``), and in
``$MEMD_HOME/sync/state.sqlite`` which projects sync and how, what this device knows of every
synced memory (the version it last pushed or applied), and a cursor per other device (the last
``seq`` read).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.atomic import write_atomic
from memd.models import now_iso


def device_id(home: Path) -> str:
    """This device's id: generated once, kept in ``$MEMD_HOME/device_id``.

    Made under a lock and written whole (:func:`memd.atomic.write_atomic`): a process stopped
    between creating the file and writing it left an empty file, and every later call then
    returned an empty id; a second process could also read the file before it was written."""
    path = home / "device_id"
    found = _read_id(path)
    if found:
        return found
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".device_id.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _read_id(path)  # made meanwhile by another process
        if found:
            return found
        new = uuid.uuid4().hex[:16]
        write_atomic(path, new + "\n")
        return new


def _read_id(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def area_of(scope: str, user: str) -> str:
    return "team" if scope == "team" else f"users/{user}"


@dataclass
class SyncProject:
    path: str
    portable: str
    scope: str
    excerpts: bool

    def to_dict(self, user: str) -> dict[str, Any]:
        return {
            "path": self.path,
            "portable": self.portable,
            "scope": self.scope,
            "excerpts": self.excerpts,
            "area": area_of(self.scope, user),
        }


@dataclass
class Known:
    clock: str
    device: str
    fp: str
    deleted: bool
    project: str


class SyncState:
    """The device's sync bookkeeping in SQLite (one connection, guarded by a lock)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._lock = threading.RLock()
        with self.tx() as db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS projects (
                    path TEXT PRIMARY KEY, portable TEXT NOT NULL, scope TEXT NOT NULL,
                    excerpts INTEGER NOT NULL DEFAULT 0, enabled_at TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS known (
                    area TEXT NOT NULL, id TEXT NOT NULL, project TEXT NOT NULL,
                    clock TEXT NOT NULL, device TEXT NOT NULL, fp TEXT NOT NULL,
                    deleted INTEGER NOT NULL, PRIMARY KEY (area, id));
                CREATE TABLE IF NOT EXISTS cursors (
                    area TEXT NOT NULL, device TEXT NOT NULL, seq INTEGER NOT NULL,
                    version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (area, device));
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """
            )
        os.chmod(path, 0o600)

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._db:
            yield self._db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # projects
    def projects(self) -> list[SyncProject]:
        with self.tx() as db:
            rows = db.execute(
                "SELECT path, portable, scope, excerpts FROM projects ORDER BY path"
            ).fetchall()
        return [SyncProject(r[0], r[1], r[2], bool(r[3])) for r in rows]

    def enable(self, project: SyncProject, user: str) -> None:
        area = area_of(project.scope, user)
        with self.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO projects VALUES (?, ?, ?, ?, ?)",
                (project.path, project.portable, project.scope, int(project.excerpts), now_iso()),
            )
            # Read the area again from the start: rows skipped while the project was not
            # synced here are applied now (merging is idempotent, so re-reading is harmless).
            db.execute("DELETE FROM cursors WHERE area = ?", (area,))

    def disable(self, path: str) -> bool:
        with self.tx() as db:
            return db.execute("DELETE FROM projects WHERE path = ?", (path,)).rowcount > 0

    # known versions
    def known(self, area: str) -> dict[str, Known]:
        with self.tx() as db:
            rows = db.execute(
                "SELECT id, clock, device, fp, deleted, project FROM known WHERE area = ?",
                (area,),
            ).fetchall()
        return {r[0]: Known(r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows}

    def set_known(self, db: sqlite3.Connection, area: str, items: dict[str, Known]) -> None:
        db.executemany(
            "INSERT OR REPLACE INTO known VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (area, mid, k.project, k.clock, k.device, k.fp, int(k.deleted))
                for mid, k in items.items()
            ],
        )

    # cursors
    def cursors(self, area: str) -> dict[str, tuple[int, int]]:
        """``{device: (last seq read, table version it was read at)}``."""
        with self.tx() as db:
            rows = db.execute(
                "SELECT device, seq, version FROM cursors WHERE area = ?", (area,)
            ).fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def set_cursor(
        self, db: sqlite3.Connection, area: str, device: str, seq: int, version: int = 0
    ) -> None:
        db.execute(
            "INSERT OR REPLACE INTO cursors VALUES (?, ?, ?, ?)", (area, device, seq, version)
        )

    # meta
    def get(self, key: str, default: Any = None) -> Any:
        with self.tx() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set(self, key: str, value: Any) -> None:
        with self.tx() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))
