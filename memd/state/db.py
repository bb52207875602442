"""The state database's file: opening ``$MEMD_HOME/state.db`` (WAL, synchronous=FULL), its
schema version, transactions, and the JSON key/value table other modules keep there (job runs,
token accounting, injected sets).

One connection, guarded by a re-entrant lock: safe to call from any thread of one process.
Other processes (the CLI) may read it concurrently thanks to WAL. The tables of transcript
reading (:mod:`memd.state.reading`) and of the extraction queue (:mod:`memd.state.segments`)
live in the same file, so that a read's turns and the file's new offset commit together.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from memd.errors import SchemaTooNew, StoreError

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


class Database:
    """The SQLite file and its key/value table. Every method is thread-safe."""

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
    def open_default(cls, home: str | os.PathLike[str]) -> Self:
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

    def checkpoint(self) -> None:
        """Fold the WAL into the main file (cheap; the daemon may call it on a schedule)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
