"""The change rows sync shares: their schema, how a memory becomes one (redacted, keyed by the
portable project id, fingerprinted) and back, the tombstone of a forget, and how every device's
rows are read from the shared LanceDB tables.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

from memd.models import Memory, Source
from memd.store.filters import clause
from memd.timestamps import EPOCH, parse_time

TABLE_PREFIX = "dev-"


def norm_time(stamp: str) -> str:
    """A timestamp in one fixed-width UTC form (millisecond precision), so strings compare."""
    when = parse_time(stamp) or EPOCH
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def bump(clock: str) -> str:
    """The clock just after ``clock`` (one millisecond later)."""
    when = parse_time(norm_time(clock)) or EPOCH
    return norm_time((when + timedelta(milliseconds=1)).isoformat())


def payload(memory: Memory, portable: str, redact_patterns: list[str]) -> dict[str, Any]:
    """The synced fields of a memory, redacted again; local counters (hits, score, last use)
    and vectors stay on the machine."""
    from memd.extract.redact import redact

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
