"""Sync across machines: memories shared through LanceDB tables on S3-compatible object storage.

Layout under ``sync_uri`` (each area is a LanceDB database; one table per device):

- ``<sync_uri>/team/dev-<device_id>``: projects synced in ``team`` scope (everyone with access).
- ``<sync_uri>/users/<sync_user>/dev-<device_id>``: projects synced in ``me`` scope.

There is no commit lock: a device only ever appends change rows to its own table and reads the
others'. A change row is a whole memory as it leaves the machine (redacted again, keyed by the
portable project id, without vectors or local counters) or a tombstone for a forget, with a
per-device sequence number ``seq`` and a clock (the update time, raised past the version it was
edited from, so an edit made after receiving a version always wins over it). Every device keeps
the version with the greatest ``(clock, device)``: deterministic, order-independent, idempotent.

Local state (``$MEMD_HOME/sync/state.sqlite``): which projects sync and how, what this device
knows of every synced memory (the version it last pushed or applied), and a cursor per other
device (the last ``seq`` read). A device joining late starts at cursor 0 and catches up from the
shared tables alone. A crash between an upload and the local bookkeeping is repaired by reading
the device's own table back first; re-sending a change is harmless (same version, same result).

The hot path never comes here: only the scheduled ``sync`` job and `memd sync now` do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.errors import MemdError, UserError
from memd.filters import clause, is_in
from memd.models import Memory, Source, now_iso

if TYPE_CHECKING:
    from memd.settings import Settings
    from memd.store import MemoryStore

log = logging.getLogger(__name__)

SCOPES = ("me", "team")
TABLE_PREFIX = "dev-"
MAX_BACKOFF_MINUTES = 60.0
APPLY_CHUNK = 256
"""Received memories applied per batch: the store's write lock is held for one batch at a time."""
COMPACT_MIN_ROWS = 1000
"""Own rows beyond twice the live ones after which the device compacts its table."""
COMPACT_PUSHES = 50
"""Pushes (fragments) after which the device compacts its table anyway."""
COMPACT_GRACE = timedelta(minutes=15)
"""Old table versions are kept this long after a compaction: readers mid-round still work."""
STATE_VERSION = 1


class SyncError(MemdError):
    """A sync round failed (the bucket is unreachable, credentials are wrong, ...)."""


# ---- identity and time


def device_id(home: Path) -> str:
    """This device's id: generated once, kept in ``$MEMD_HOME/device_id``."""
    path = home / "device_id"
    with contextlib.suppress(FileNotFoundError):
        found = path.read_text().strip()
        if found:
            return found
    home.mkdir(parents=True, exist_ok=True)
    new = uuid.uuid4().hex[:16]
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(new + "\n")
    return new


def norm_time(stamp: str) -> str:
    """A timestamp in one fixed-width UTC form (millisecond precision), so strings compare."""
    try:
        when = datetime.fromisoformat((stamp or "").replace("Z", "+00:00"))
    except ValueError:
        when = datetime.fromtimestamp(0, UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def bump(clock: str) -> str:
    """The clock just after ``clock`` (one millisecond later)."""
    when = datetime.fromisoformat(norm_time(clock).replace("Z", "+00:00"))
    return norm_time((when + timedelta(milliseconds=1)).isoformat())


def area_of(scope: str, user: str) -> str:
    return "team" if scope == "team" else f"users/{user}"


# ---- what leaves the machine


def payload(memory: Memory, portable: str, redact_patterns: list[str]) -> dict[str, Any]:
    """The synced fields of a memory, redacted again; local counters (hits, score, last use)
    and vectors stay on the machine."""
    from memd.redact import redact

    def clean(text: str) -> str:
        return redact(text or "", redact_patterns)

    history = []
    for entry in memory.history:
        item = dict(entry)
        for key, value in item.items():
            if isinstance(value, str) and key not in ("at", "by"):
                item[key] = clean(value)
        history.append(item)
    return {
        "id": memory.id,
        "project": portable,
        "kind": memory.kind,
        "text": clean(memory.text).strip() or "[REDACTED]",
        "topic": clean(memory.topic),
        "keywords": [clean(k) for k in memory.keywords],
        "importance": round(float(memory.importance), 4),
        "pinned": bool(memory.pinned),
        "status": memory.status,
        "superseded_by": memory.superseded_by,
        "created_at": norm_time(memory.created_at),
        "sources": json.dumps([s.__dict__ for s in memory.sources], sort_keys=True),
        "history": json.dumps(history, ensure_ascii=False, sort_keys=True),
    }


def fingerprint(fields: dict[str, Any]) -> str:
    keys = sorted(k for k in fields if k in PAYLOAD_KEYS)
    blob = json.dumps({k: fields[k] for k in keys}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


PAYLOAD_KEYS = (
    "id",
    "project",
    "kind",
    "text",
    "topic",
    "keywords",
    "importance",
    "pinned",
    "status",
    "superseded_by",
    "created_at",
    "sources",
    "history",
)


def change_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("seq", pa.int64()),
            ("id", pa.string()),
            ("project", pa.string()),
            ("device", pa.string()),
            ("clock", pa.string()),
            ("deleted", pa.bool_()),
            ("kind", pa.string()),
            ("text", pa.string()),
            ("topic", pa.string()),
            ("keywords", pa.list_(pa.string())),
            ("importance", pa.float64()),
            ("pinned", pa.bool_()),
            ("status", pa.string()),
            ("superseded_by", pa.string()),
            ("created_at", pa.string()),
            ("sources", pa.string()),
            ("history", pa.string()),
            ("pushed_at", pa.string()),
        ]
    )


def memory_from_row(row: dict[str, Any], local_project: str) -> Memory:
    return Memory(
        id=row["id"],
        text=row["text"],
        kind=row["kind"],
        project=local_project,
        topic=row.get("topic") or "",
        keywords=list(row.get("keywords") or []),
        importance=float(row.get("importance") or 0.0),
        pinned=bool(row.get("pinned")),
        status=row.get("status") or "active",
        superseded_by=row.get("superseded_by") or "",
        created_at=row.get("created_at") or "",
        updated_at=row["clock"],
        sources=[Source.from_dict(s) for s in json.loads(row.get("sources") or "[]")],
        history=json.loads(row.get("history") or "[]"),
    )


# ---- local state


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


# ---- errors, explained


def explain_error(text: str) -> str:
    """What a failure most likely means, and how to fix it."""
    low = text.lower()
    if "nosuchbucket" in low or "bucket does not exist" in low:
        return "the bucket does not exist: create it (e.g. `aws s3 mb s3://BUCKET`) or fix sync_uri"
    if any(
        w in low
        for w in ("invalidaccesskeyid", "signaturedoesnotmatch", "accessdenied", "403", "forbidden")
    ):
        return (
            "the storage refused the credentials: check AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and the bucket policy"
        )
    if "credential" in low:
        return (
            "no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
        )
    if "http" in low and ("not allowed" in low or "allow_http" in low):
        return "a plain-HTTP endpoint: set AWS_ALLOW_HTTP=true (only for a server you trust)"
    if any(
        w in low
        for w in ("timed out", "timeout", "connect", "refused", "dns", "unreachable", "resolve")
    ):
        return (
            "the storage is unreachable: check the network and the endpoint "
            "(AWS_ENDPOINT_URL for MinIO or another S3-compatible server)"
        )
    return "see the error above; `memd doctor` checks the sync setup"


# ---- the engine


class SyncEngine:
    """One per MEMD_HOME: enable/disable projects, run rounds (one at a time), report."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.home
        self.state = SyncState(settings.home / "sync" / "state.sqlite")
        self.device = device_id(settings.home)
        self._round = threading.Lock()

    # -- configuration
    def enable(self, path: str, scope: str = "me", excerpts: bool = False) -> dict[str, Any]:
        from memd.project import portable_project, resolve_project

        if scope not in SCOPES:
            raise UserError(f"unknown scope {scope!r}; choose one of: {', '.join(SCOPES)}")
        root = resolve_project(path)
        if root.startswith("user:") and scope != "me":
            raise UserError(
                f"{root} holds your own preferences: it syncs only in `me` scope (--scope me)"
            )
        if not root.startswith("user:") and not os.path.isdir(root):
            raise UserError(f"no such directory: {root}")
        project = SyncProject(root, portable_project(root), scope, bool(excerpts))
        self.state.enable(project, self.settings.sync_user)
        out = project.to_dict(self.settings.sync_user)
        if project.portable.startswith("path:"):
            out["warning"] = (
                "no git remote: this project is identified by its path, so only a checkout "
                "at the same path on another machine shares its memories"
            )
        return {"enabled": out, "sync_uri": self.settings.sync_uri}

    def disable(self, path: str) -> dict[str, Any]:
        from memd.project import resolve_project

        root = resolve_project(path)
        if not self.state.disable(root):
            raise UserError(f"{root} is not synced")
        return {"disabled": root}

    def status(self) -> dict[str, Any]:
        last = self.state.get("last_round", None)
        failures = int(self.state.get("failures", 0))
        out: dict[str, Any] = {
            "configured": bool(self.settings.sync_uri),
            "uri": self.settings.sync_uri,
            "device_id": self.device,
            "user": self.settings.sync_user,
            "projects": [p.to_dict(self.settings.sync_user) for p in self.state.projects()],
            "last_round": last,
            "last_ok": self.state.get("last_ok", None),
            "failures": failures,
            "next_attempt": self.state.get("next_attempt", None),
            "running": self._round.locked(),
        }
        if last and not last.get("ok"):
            out["hint"] = explain_error(str(last.get("error", "")))
        return out

    # -- rounds
    def run(self, store: MemoryStore, *, trigger: str = "manual") -> dict[str, Any]:
        """One round, bounded by ``sync_timeout_seconds``: raises SyncError on failure.

        A scheduled round after failures waits for its back-off (doubling up to an hour);
        `memd sync now` never waits for it.
        """
        if not self.settings.sync_uri:
            raise SyncError("sync is not configured: set sync_uri (MEMD_SYNC_URI=s3://bucket/memd)")
        if trigger == "schedule":
            due = self.state.get("next_attempt", None)
            if due and due > now_iso():
                return {"skipped": f"backing off after failures until {due}"}
        timeout = float(self.settings.sync_timeout_seconds)
        if not self._round.acquire(timeout=min(5.0, timeout)):
            raise SyncError("a sync round is still running (a slow or hanging bucket?)")
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["result"] = self.round(store)
            except BaseException as exc:
                outcome["error"] = exc
            finally:
                self._round.release()

        started = time.monotonic()
        worker = threading.Thread(target=work, name="memd-sync", daemon=True)
        worker.start()
        worker.join(timeout)
        took = round(time.monotonic() - started, 3)
        if worker.is_alive():
            error = f"timed out: the sync round did not finish within {timeout:g} s"
            self.record(False, error, {}, took)
            raise SyncError(f"{error}: {explain_error('timed out')}")
        if "error" in outcome:
            exc = outcome["error"]
            text = f"{type(exc).__name__}: {exc}"[:1000]
            self.record(False, text, {}, took)
            raise SyncError(f"sync failed: {text[:500]}; {explain_error(text)}") from exc
        result = dict(outcome["result"])
        self.record(True, "", result, took)
        return {**result, "took_s": took}

    def record(self, ok: bool, error: str, result: dict[str, Any], took: float) -> None:
        at = now_iso()
        failures = 0 if ok else int(self.state.get("failures", 0)) + 1
        self.state.set("failures", failures)
        self.state.set("last_round", {"at": at, "ok": ok, "error": error, "took_s": took, **result})
        if ok:
            self.state.set("last_ok", at)
            self.state.set("next_attempt", None)
        else:
            minutes = min(
                MAX_BACKOFF_MINUTES, self.settings.sync_interval_minutes * 2 ** (failures - 1)
            )
            due = datetime.now(UTC) + timedelta(minutes=minutes)
            self.state.set("next_attempt", norm_time(due.isoformat()))
            log.warning("sync failed (%d in a row): %s", failures, error)

    def connect(self, area: str) -> Any:
        import lancedb

        timeout = max(1, int(self.settings.sync_timeout_seconds))
        options = {
            "timeout": f"{min(timeout, 20)}s",
            "connect_timeout": "5s",
        }
        options.update(self.settings.sync_storage_options)
        uri = f"{self.settings.sync_uri}/{area}"
        if "://" in uri:
            return lancedb.connect(uri, storage_options=options)
        return lancedb.connect(uri)

    def round(self, store: MemoryStore) -> dict[str, Any]:
        """Pull everyone's new rows, then push this device's changes, area by area."""
        projects = self.state.projects()
        totals = {"pulled": 0, "applied": 0, "deleted": 0, "pushed": 0, "devices": 0}
        if not projects:
            return {**totals, "skipped": "no project is synced: `memd sync enable --project DIR`"}
        areas: dict[str, list[SyncProject]] = {}
        for p in projects:
            areas.setdefault(area_of(p.scope, self.settings.sync_user), []).append(p)
        for area, members in sorted(areas.items()):
            db = self.connect(area)
            got = self.pull(store, db, area, members)
            sent = self.push(store, db, area, members)
            for key, value in {**got, **sent}.items():
                totals[key] = totals.get(key, 0) + value
        return totals

    def local_versions(
        self, store: MemoryStore, members: list[SyncProject]
    ) -> tuple[dict[str, Memory], dict[str, SyncProject]]:
        by_path = {p.path: p for p in members}
        found = store.query(is_in("project", list(by_path)))
        local = {}
        for m in found:
            p = by_path[m.project]
            if m.kind == "excerpt" and p.scope == "team" and not p.excerpts:
                continue  # raw turns stay on this machine in team scope unless opted in
            local[m.id] = m
        return local, by_path

    def pull(
        self, store: MemoryStore, db: Any, area: str, members: list[SyncProject]
    ) -> dict[str, int]:
        """Read every device's rows past its cursor (this device's own first: a push whose
        bookkeeping a crash lost is recognised here) and apply the winners locally."""
        cursors = self.state.cursors(area)
        got = fetch_changes(db, cursors, self.device)
        newest, pulled, names = got.newest, got.rows, got.tables
        if not got.read_to:
            return {"pulled": 0, "applied": 0, "deleted": 0, "devices": names}
        by_portable: dict[str, SyncProject] = {}
        for p in members:
            by_portable.setdefault(p.portable, p)
        wanted = [(mid, row) for mid, row in newest.items() if row["project"] in by_portable]
        applied = deleted = 0
        for offset in range(0, len(wanted), APPLY_CHUNK):
            chunk = wanted[offset : offset + APPLY_CHUNK]
            vectors = self.vectors_for(store, chunk, by_portable)  # embedding: outside the lock
            with store.write_lock:  # decided on the rows as they are now, written before any other
                puts, deletes, learned = self.decide(store, area, chunk, by_portable)
                store.write(puts, {m.id: vectors[m.id] for m in puts if m.id in vectors})
                if deletes:
                    store.delete(deletes)
                with self.state.tx() as tx:
                    self.state.set_known(tx, area, learned)
            applied += len(puts)
            deleted += len(deletes)
        with self.state.tx() as tx:
            for dev, (seq, version) in got.read_to.items():
                self.state.set_cursor(tx, area, dev, max(seq, cursors.get(dev, (0, 0))[0]), version)
        return {"pulled": pulled, "applied": applied, "deleted": deleted, "devices": names}

    def vectors_for(
        self,
        store: MemoryStore,
        chunk: list[tuple[str, dict[str, Any]]],
        by_portable: dict[str, SyncProject],
    ) -> dict[str, Any]:
        """Vectors for the incoming texts: the stored one when the text is unchanged, else new."""
        existing = store.rows_with_vectors(mid for mid, _ in chunk)
        vectors: dict[str, Any] = {}
        fresh: list[tuple[str, str]] = []
        for mid, row in chunk:
            if row["deleted"]:
                continue
            text = memory_from_row(row, by_portable[row["project"]].path).text
            if mid in existing and existing[mid]["text"] == text:
                vectors[mid] = existing[mid]["vector"]
            else:
                fresh.append((mid, text))
        if fresh:
            embedded = store.embedder.embed([t for _, t in fresh])
            vectors.update({mid: v for (mid, _), v in zip(fresh, embedded, strict=True)})
        return vectors

    def decide(
        self,
        store: MemoryStore,
        area: str,
        chunk: list[tuple[str, dict[str, Any]]],
        by_portable: dict[str, SyncProject],
    ) -> tuple[list[Memory], list[str], dict[str, Known]]:
        """Which incoming versions win over the local ones (call under the store's write lock)."""
        known = self.state.known(area)
        local = {m.id: m for m in store.query(is_in("id", [mid for mid, _ in chunk]))}
        puts: list[Memory] = []
        deletes: list[str] = []
        learned: dict[str, Known] = {}
        for mid, row in chunk:
            project = by_portable[row["project"]]
            k = known.get(mid)
            mine = local.get(mid)
            if mine is not None and mine.project != project.path:
                continue  # the same id under another local project: leave it alone
            incoming = (row["clock"], row["device"])
            if mine is not None and (k is None or k.deleted or self.dirty(mine, project, k)):
                ours = (self.clock_for(mine, k), self.device)  # an unpushed local version
            elif mine is None and k is not None and not k.deleted:
                ours = (max(now_iso(), bump(k.clock)), self.device)  # an unpushed forget
            elif k is not None:
                ours = (k.clock, k.device)
            else:
                ours = ("", "")
            if incoming <= ours:
                newer = k is None or k.deleted or incoming > (k.clock, k.device)
                if mine is not None and not row["deleted"] and newer:
                    # This device's own push, read back after a crash lost its bookkeeping.
                    fp = fingerprint(payload(mine, project.portable, self.settings.redact_patterns))
                    theirs = memory_from_row(row, project.path)
                    if fp == fingerprint(payload(theirs, project.portable, [])):
                        learned[mid] = Known(row["clock"], row["device"], fp, False, row["project"])
                continue
            if row["deleted"]:
                if mine is not None:
                    deletes.append(mid)
                learned[mid] = Known(row["clock"], row["device"], "", True, row["project"])
                continue
            memory = memory_from_row(row, project.path)
            if mine is not None:  # local counters stay local
                memory.hits, memory.last_used_at = mine.hits, mine.last_used_at
                memory.score = mine.score if mine.text == memory.text else memory.importance
            puts.append(memory)
            fp = fingerprint(payload(memory, project.portable, self.settings.redact_patterns))
            learned[mid] = Known(row["clock"], row["device"], fp, False, row["project"])
        return puts, deletes, learned

    def dirty(self, memory: Memory, project: SyncProject, known: Known) -> bool:
        fp = fingerprint(payload(memory, project.portable, self.settings.redact_patterns))
        return fp != known.fp

    def clock_for(self, memory: Memory, known: Known | None) -> str:
        """The clock of a local version: its update time, past the version it was made from."""
        clock = norm_time(memory.updated_at)
        if known is not None and clock <= known.clock:
            clock = bump(known.clock)
        return clock

    def push(
        self, store: MemoryStore, db: Any, area: str, members: list[SyncProject]
    ) -> dict[str, int]:
        """Append this device's changes since the last push (and tombstones for forgets)."""
        import pyarrow as pa

        local, by_path = self.local_versions(store, members)
        portables = {p.portable for p in members}
        known = self.state.known(area)
        rows: list[dict[str, Any]] = []
        learned: dict[str, Known] = {}
        at = now_iso()
        for mid, memory in local.items():
            project = by_path[memory.project]
            fields = payload(memory, project.portable, self.settings.redact_patterns)
            fp = fingerprint(fields)
            k = known.get(mid)
            if k is not None and not k.deleted and k.fp == fp:
                continue
            clock = self.clock_for(memory, k)
            rows.append({**fields, "device": self.device, "clock": clock, "deleted": False})
            learned[mid] = Known(clock, self.device, fp, False, project.portable)
        for mid, k in known.items():
            if k.deleted or mid in local or k.project not in portables:
                continue
            clock = max(norm_time(at), bump(k.clock))
            rows.append(tombstone(mid, k.project, self.device, clock))
            learned[mid] = Known(clock, self.device, "", True, k.project)
        if not rows:
            return {"pushed": 0}
        own = TABLE_PREFIX + self.device
        start = self.state.cursors(area).get(self.device, (0, 0))[0]
        for offset, row in enumerate(rows, 1):
            row["seq"] = start + offset
            row["pushed_at"] = at
        data = pa.Table.from_pylist(rows, schema=change_schema())
        listed = own in list_tables(db)
        table = open_table(db, own) if listed else None
        log.info("sync: pushing %d change(s) to %s as %s", len(rows), area, own)
        if table is not None:
            table.add(data)  # all or nothing: the rows are visible once the manifest is written
        else:
            # New, or a first upload that never committed (nothing of it is readable): start it.
            mode = "overwrite" if listed else "create"
            db.create_table(own, data=data, schema=change_schema(), mode=mode)
        with self.state.tx() as tx:
            self.state.set_known(tx, area, learned)
            self.state.set_cursor(tx, area, self.device, start + len(rows))
        out = {"pushed": len(rows)}
        try:
            out["compacted"] = self.maybe_compact(db, area, len(rows))
        except Exception as exc:  # the push is done; compaction is retried after the next one
            log.warning("sync: compacting %s/%s failed: %s", area, own, exc)
        return out

    def maybe_compact(self, db: Any, area: str, pushed: int) -> int:
        """Compact this device's own table once it holds many superseded rows or fragments.

        Only a row for which this device has published a newer row (same id, higher seq) is
        dropped. A reader that had not read it yet reads the newer one instead, and only the
        newest version from each device matters to the merge, so nothing unread is lost;
        tombstones are newest rows and stay. Old versions are cleaned after COMPACT_GRACE, past
        any reader's round. Returns how many rows were dropped."""
        key = f"compact.{area}"
        record = dict(self.state.get(key, None) or {"rows": 0, "pushes": 0})
        record["rows"] = int(record["rows"]) + pushed
        record["pushes"] = int(record["pushes"]) + 1
        mine = sum(1 for k in self.state.known(area).values() if k.device == self.device)
        if record["rows"] < 2 * mine + COMPACT_MIN_ROWS and record["pushes"] < COMPACT_PUSHES:
            self.state.set(key, record)
            return 0
        table = open_table(db, TABLE_PREFIX + self.device)
        if table is None:
            return 0
        cols = table.search().select(["id", "seq"]).limit(table.count_rows()).to_arrow()
        newest: dict[str, int] = {}
        for mid, seq in zip(cols["id"].to_pylist(), cols["seq"].to_pylist(), strict=True):
            newest[mid] = max(seq, newest.get(mid, -1))
        keep = set(newest.values())
        drop = [seq for seq in cols["seq"].to_pylist() if seq not in keep]
        for start in range(0, len(drop), 5000):
            chunk = drop[start : start + 5000]
            table.delete(is_in("seq", [int(x) for x in chunk]).sql)
        table.optimize(cleanup_older_than=COMPACT_GRACE)
        self.state.set(key, {"rows": len(keep), "pushes": 0})
        log.info("sync: compacted %s: dropped %d superseded row(s)", area, len(drop))
        return len(drop)


def tombstone(mid: str, project: str, device: str, clock: str) -> dict[str, Any]:
    return {
        "id": mid,
        "project": project,
        "device": device,
        "clock": clock,
        "deleted": True,
        "kind": "",
        "text": "",
        "topic": "",
        "keywords": [],
        "importance": 0.0,
        "pinned": False,
        "status": "",
        "superseded_by": "",
        "created_at": "",
        "sources": "[]",
        "history": "[]",
    }


@dataclass
class Fetched:
    newest: dict[str, dict[str, Any]]
    """The newest row per memory id among the rows read."""
    read_to: dict[str, tuple[int, int]]
    """``{device: (highest seq read, table version)}`` for the tables that had new rows."""
    rows: int
    tables: int


def fetch_changes(db: Any, cursors: dict[str, tuple[int, int]], own: str) -> Fetched:
    """Every device's rows past its cursor, this device's own table first. A table whose
    version has not moved since it was last read costs one manifest read and no data read."""
    names = [n for n in list_tables(db) if n.startswith(TABLE_PREFIX)]
    names.sort(key=lambda n: (n != TABLE_PREFIX + own, n))
    newest: dict[str, dict[str, Any]] = {}
    read_to: dict[str, tuple[int, int]] = {}
    pulled = 0
    for name in names:
        dev = name[len(TABLE_PREFIX) :]
        cursor, seen_version = cursors.get(dev, (0, 0))
        tbl = open_table(db, name)
        if tbl is None:
            continue  # a first upload that never committed: data files, no version yet
        version = int(tbl.version)
        if version == seen_version:
            continue
        limit = max(1, int(tbl.count_rows()))
        rows = (
            tbl.search()
            .where(clause("seq > ?", int(cursor)).sql)
            .limit(limit)
            .to_arrow()
            .to_pylist()
        )
        pulled += len(rows)
        read_to[dev] = (max([cursor, *(int(r["seq"]) for r in rows)]), version)
        for row in rows:
            have = newest.get(row["id"])
            if have is None or (row["clock"], row["device"]) > (have["clock"], have["device"]):
                newest[row["id"]] = row
    return Fetched(newest, read_to, pulled, len(names))


def open_table(db: Any, name: str) -> Any:
    """The table, or None when its directory holds no committed version yet."""
    try:
        return db.open_table(name)
    except ValueError as exc:
        if "was not found" in str(exc):
            return None
        raise


def list_tables(db: Any) -> list[str]:
    """Every table name in a LanceDB database (the listing is paginated)."""
    names: list[str] = []
    token = None
    while True:
        page = db.list_tables(page_token=token) if token else db.list_tables()
        names.extend(page.tables)
        token = getattr(page, "page_token", None)
        if not token or not page.tables:
            return names


def probe(settings: Settings, timeout: float = 15.0) -> str | None:
    """List the shared prefix (bounded by ``timeout``): None when it answers, else the error."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            engine = SyncEngine.__new__(SyncEngine)
            engine.settings = settings
            list_tables(engine.connect("team"))
        except Exception as exc:
            outcome["error"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=work, name="memd-sync-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return f"timed out: no answer within {timeout:g} s"
    return outcome.get("error")


_ENGINES: dict[str, SyncEngine] = {}
_ENGINES_LOCK = threading.Lock()


def engine_for(settings: Settings) -> SyncEngine:
    """The engine of this MEMD_HOME (one per process, so rounds never overlap)."""
    key = str(settings.home.resolve())
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = SyncEngine(settings)
        return engine


def sync_job(store: MemoryStore, settings: Settings) -> dict[str, Any]:
    """The scheduled `sync` job: a round, unless backing off after failures."""
    return engine_for(settings).run(store, trigger="schedule")
