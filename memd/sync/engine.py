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

Modules: :mod:`memd.sync.changes` (the change rows and how they are read),
:mod:`memd.sync.state` (the local state), :mod:`memd.sync.pull` (the pull half of a round);
this one runs the rounds and pushes.

The hot path never comes here: only the scheduled ``sync`` job and `memd sync now` do.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memd.errors import MemdError, UserError
from memd.models import Memory, now_iso
from memd.store.filters import is_in
from memd.sync.changes import (
    TABLE_PREFIX,
    bump,
    change_schema,
    fingerprint,
    list_tables,
    norm_time,
    open_table,
    payload,
    tombstone,
)
from memd.sync.pull import SyncPull
from memd.sync.state import Known, SyncProject, SyncState, area_of, device_id

if TYPE_CHECKING:
    from memd.settings import Settings
    from memd.store.table import MemoryStore

log = logging.getLogger(__name__)

SCOPES = ("me", "team")
MAX_BACKOFF_MINUTES = 60.0
COMPACT_MIN_ROWS = 1000
"""Own rows beyond twice the live ones after which the device compacts its table."""
COMPACT_PUSHES = 50
"""Pushes (fragments) after which the device compacts its table anyway."""
COMPACT_GRACE = timedelta(minutes=15)
"""Old table versions are kept this long after a compaction: readers mid-round still work."""


class SyncError(MemdError):
    """A sync round failed (the bucket is unreachable, credentials are wrong, ...)."""


# ---- errors, explained


def explain_error(text: str) -> str:
    """What a failure most likely means, and how to fix it."""
    low = text.lower()
    if "nosuchbucket" in low or "bucket does not exist" in low:
        return "the bucket does not exist: create it (e.g. `aws s3 mb s3://BUCKET`) or fix sync_uri"
    if re.search(r"\b403\b", low) or any(  # a status, not a port such as :40313
        w in low
        for w in ("invalidaccesskeyid", "signaturedoesnotmatch", "accessdenied", "forbidden")
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


class SyncEngine(SyncPull):
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
        return connect_area(self.settings, area)

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


def connect_area(settings: Settings, area: str) -> Any:
    """The LanceDB database of one area (``team`` or ``users/<user>``) under the sync URI."""
    import lancedb

    timeout = max(1, int(settings.sync_timeout_seconds))
    options = {
        "timeout": f"{min(timeout, 20)}s",
        "connect_timeout": "5s",
    }
    options.update(settings.sync_storage_options)
    uri = f"{settings.sync_uri}/{area}"
    if "://" in uri:
        return lancedb.connect(uri, storage_options=options)
    return lancedb.connect(uri)


def probe(settings: Settings, timeout: float = 15.0) -> str | None:
    """List the shared prefix (bounded by ``timeout``): None when it answers, else the error."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            list_tables(connect_area(settings, "team"))
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
