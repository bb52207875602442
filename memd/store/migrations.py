"""Schema versions and migrations: a store written by an older memd is upgraded, never lost.

Two things under ``$MEMD_HOME`` carry a schema version:

- the memory store: ``schema_version`` in ``store/memd-meta.json``, beside the LanceDB table
  (absent: 0, the layout before versions existed);
- the state DB: ``PRAGMA user_version`` of ``state.db``.

:func:`migrate` runs when a process opens the store as the writer, under the writer lock: at
daemon start, or in a one-shot CLI command when no daemon runs. It refuses anything written by a
newer memd (:class:`~memd.errors.SchemaTooNew`, nothing touched). Otherwise, when a step is
pending, it first copies the store, the journal and the state DB to
``$MEMD_HOME/backups/<UTC time>-store-v<n>-state-v<m>/``, then applies each step in order and logs
it. Every step is idempotent: one interrupted half-way simply runs again at the next start.

The copy of the state DB is redacted like the DB itself: a backup must not bring back the raw
secrets that state DBs of version 0 held.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memd.atomic import write_atomic
from memd.errors import SchemaTooNew, StoreError
from memd.state import STATE_VERSION, turn_from_json, turn_to_json
from memd.store.layout import TABLE
from memd.store.table import META_FILE, STORE_VERSION

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

BACKUPS_DIR = "backups"


@dataclass(frozen=True)
class Step:
    """One migration: ``part`` ("store" or "state") from ``to - 1`` to ``to``."""

    part: str
    to: int
    description: str
    apply: Callable[[Settings], None]

    def __str__(self) -> str:
        return f"{self.part} v{self.to - 1} → v{self.to}: {self.description}"


# ---- where the versions live


def store_root(settings: Settings) -> Path:
    return settings.home / "store"


def state_path(settings: Settings) -> Path:
    return settings.home / "state.db"


def store_version(settings: Settings) -> int | None:
    """The store's schema version; None when there is no store yet."""
    root = store_root(settings)
    try:
        meta = json.loads((root / META_FILE).read_text())
    except FileNotFoundError:
        return 0 if (root / f"{TABLE}.lance").exists() else None
    except ValueError as exc:
        raise StoreError(f"{root / META_FILE} is damaged: {exc}") from exc
    return int(meta.get("schema_version", 0))


def state_version(settings: Settings) -> int | None:
    """The state DB's schema version; None when there is no state DB yet. Read-only: with no
    WAL beside it, the file's header says (a read-only connection would leave -wal and -shm
    files behind); with one, SQLite reads it."""
    path = state_path(settings)
    wal = path.with_name(path.name + "-wal")
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
        if len(header) < 100:
            return None  # empty: created, never written
        if not header.startswith(b"SQLite format 3\x00"):
            raise StoreError(f"state database {path} is not an SQLite database")
        if not wal.exists() or wal.stat().st_size == 0:
            return int.from_bytes(header[60:64], "big")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            return int(db.execute("PRAGMA user_version").fetchone()[0])
        finally:
            db.close()
    except FileNotFoundError:
        return None
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"state database {path}: {exc}") from exc


def check_supported(settings: Settings) -> None:
    """Refuse (SchemaTooNew) a store or state DB written by a newer memd."""
    for part, have, known, where in (
        ("memory store", store_version(settings), STORE_VERSION, store_root(settings)),
        ("state DB", state_version(settings), STATE_VERSION, state_path(settings)),
    ):
        if have is not None and have > known:
            raise SchemaTooNew(
                f"the {part} in {where} has schema version {have}, but this memd only knows up "
                f"to {known}: it was written by a newer memd. Upgrade memd (or restore a backup "
                f"from {settings.home / BACKUPS_DIR}); memd leaves it untouched."
            )


def pending(settings: Settings) -> list[Step]:
    """The steps :func:`migrate` would apply, in order (refuses a newer schema)."""
    check_supported(settings)
    steps = []
    store, state = store_version(settings), state_version(settings)
    if store is not None:
        steps += [s for s in STEPS if s.part == "store" and s.to > store]
    if state is not None:
        steps += [s for s in STEPS if s.part == "state" and s.to > state]
    return steps


def migrate(settings: Settings) -> list[str]:
    """Back up, then apply every pending step. Call under the writer lock. Returns the steps."""
    steps = pending(settings)
    if not steps:
        return []
    started = time.monotonic()
    target = backup(settings)
    log.info("migrating %s; backup in %s", settings.home, target)
    for step in steps:
        t0 = time.monotonic()
        step.apply(settings)
        log.info("migrated %s (%.2f s)", step, time.monotonic() - t0)
    log.info("migration done in %.2f s", time.monotonic() - started)
    return [str(s) for s in steps]


# ---- the backup


def backup(settings: Settings) -> Path:
    """Copy the store, the journal and the (redacted) state DB to a new backup directory."""
    home = settings.home
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    label = f"store-v{store_version(settings)}-state-v{state_version(settings)}"
    base = home / BACKUPS_DIR
    base.mkdir(mode=0o700, exist_ok=True)
    target = base / f"{stamp}-{label}"
    n = 1
    while target.exists():
        n += 1
        target = base / f"{stamp}-{label}-{n}"
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(mode=0o700)
    if store_root(settings).exists():
        shutil.copytree(store_root(settings), partial / "store")
    journal = home / "journal.jsonl"
    if journal.exists():
        shutil.copy2(journal, partial / "journal.jsonl")
    if state_path(settings).exists():
        copy_state(state_path(settings), partial / "state.db", settings.redact_patterns)
    partial.rename(target)  # complete, or not there at all
    prune_backups(base)
    return target


BACKUPS_KEPT = 3
"""Migration backups kept (each is a full copy of the store): the newest ones."""
BACKUP_NAME = re.compile(r"^\d{8}T\d{6}Z-store-v\d+-state-v\d+(?:-\d+)?(?:\.partial)?$")


def prune_backups(base: Path, keep: int = BACKUPS_KEPT) -> list[Path]:
    """Delete all but the ``keep`` newest backups (and any left half-written) that memd made
    in ``base``; anything else there is left alone. Returns what was deleted."""
    ours = sorted(p for p in base.iterdir() if p.is_dir() and BACKUP_NAME.match(p.name))
    done = [p for p in ours if not p.name.endswith(".partial")]
    doomed = [p for p in ours if p.name.endswith(".partial")] + done[: max(0, len(done) - keep)]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
        log.info("old migration backup removed: %s", path)
    return doomed


def copy_state(source: Path, dest: Path, patterns: Iterable[str]) -> None:
    """A consistent copy of a live SQLite DB (its backup API), with the stored turns redacted."""
    src = sqlite3.connect(source, timeout=10)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.close(fd)
    dst = sqlite3.connect(dest, isolation_level=None)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
        redact_state(dst, patterns)
    finally:
        dst.close()
        src.close()


def redact_state(
    db: sqlite3.Connection, patterns: Iterable[str], version: int | None = None
) -> int:
    """Redact every stored turn and error in place (and set ``version`` in the same
    transaction), then rebuild the file without the pages that held the old text."""
    from memd.extract.redact import redact, redact_turn

    patterns = tuple(patterns)
    db.execute("PRAGMA secure_delete=ON")
    changed = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        for uuid, data in db.execute("SELECT uuid, data FROM turns").fetchall():
            clean = turn_to_json(redact_turn(turn_from_json(data), patterns))
            if clean != data:
                db.execute("UPDATE turns SET data = ? WHERE uuid = ?", (clean, uuid))
                changed += 1
        rows = db.execute("SELECT key, last_error FROM segments WHERE last_error != ''")
        for key, error in rows.fetchall():
            clean = redact(error, patterns)
            if clean != error:
                db.execute("UPDATE segments SET last_error = ? WHERE key = ?", (clean, key))
        if version is not None:
            db.execute(f"PRAGMA user_version = {int(version)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("VACUUM")  # no free page keeps a copy of what was replaced
    return changed


# ---- the steps


def record_store_version(settings: Settings, version: int) -> None:
    """Write ``version`` as the store's schema version in its meta file."""
    path = store_root(settings) / META_FILE
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        meta = {}
    meta["schema_version"] = version
    write_atomic(path, json.dumps(meta), mode=0o644)


def store_v1(settings: Settings) -> None:
    """Record the schema version beside the table (the layout itself is unchanged)."""
    record_store_version(settings, 1)


def store_v2(settings: Settings) -> None:
    """Add the ``subject`` and ``value`` columns, empty in every row (a memory written before
    has its subject read from its text, as before)."""
    import lancedb

    db = lancedb.connect(store_root(settings))
    if TABLE in db.list_tables().tables:
        table = db.open_table(TABLE)
        missing = [c for c in ("subject", "value") if c not in table.schema.names]
        if missing:
            table.add_columns({c: "CAST('' AS STRING)" for c in missing})
    record_store_version(settings, 2)


def state_v1(settings: Settings) -> None:
    """Redact the turns that version 0 stored as read; zero deleted content from now on."""
    db = sqlite3.connect(state_path(settings), isolation_level=None, timeout=10)
    try:
        db.execute("PRAGMA busy_timeout=10000")
        changed = redact_state(db, settings.redact_patterns, version=1)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    log.info("state: %d stored turn(s) redacted", changed)


STEPS: list[Step] = [
    Step("store", 1, "record the schema version in memd-meta.json", store_v1),
    Step("state", 1, "redact stored turns, zero deleted content", state_v1),
    Step("store", 2, "subject and value columns", store_v2),
]
"""Every step ever, oldest first; each part's last ``to`` is its current version."""
