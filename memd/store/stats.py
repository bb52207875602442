"""What the store holds, in numbers: counts, growth per week, hits, archive rate, session timelines.

Computed with Arrow over a few narrow columns (never the vectors), so `memd stats`, the UI's
Projects and Health pages and its Sessions timeline stay fast at 100k memories.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memd.models import now_iso
from memd.store.filters import Filter, is_in, match
from memd.store.table import MemoryStore

log = logging.getLogger(__name__)

WEEKS = 26
"""Weekly series cover this many weeks, ending with the newest one that has data."""
HIT_BUCKETS = ((0, 0), (1, 1), (2, 5), (6, 20), (21, None))
SCAN_COLUMNS = [
    "id",
    "project",
    "kind",
    "status",
    "created_at",
    "updated_at",
    "last_used_at",
    "hits",
]


def dir_size(path: Path) -> int:
    """Bytes on disk under ``path`` (0 when it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan(store: MemoryStore, columns: list[str], where: Filter | None = None) -> pa.Table | None:
    if store.table is None:
        return None
    count = store.count(where)
    if count == 0:
        return None
    q = store.table.search().select(columns)
    if where:
        q = q.where(where.sql)
    return q.limit(count).to_arrow()


def counts(table: pa.Table, key: str) -> dict[str, int]:
    rows = table.group_by(key).aggregate([(key, "count")]).to_pylist()
    return {r[key]: int(r[f"{key}_count"]) for r in sorted(rows, key=lambda r: str(r[key]))}


def monday(day: str) -> str | None:
    try:
        d = date.fromisoformat(day)
    except ValueError:
        return None
    return (d - timedelta(days=d.weekday())).isoformat()


def weekly(table: pa.Table, stamp: str, by: str | None = None) -> dict[str, Any]:
    """Counts per week (Monday's date) and per ``by`` value of the rows' ``stamp`` column.

    Grouped by day in Arrow first (a few hundred groups), then folded into weeks here."""
    if table.num_rows == 0:
        return {"weeks": [], "series": {}}
    cols: dict[str, Any] = {"day": pc.utf8_slice_codeunits(table.column(stamp), 0, 10)}
    if by:
        cols[by] = table.column(by)
    keys = ["day", by] if by else ["day"]
    grouped = pa.table(cols).group_by(keys).aggregate([("day", "count")]).to_pylist()
    per_week: dict[tuple[str, str], int] = {}
    for r in grouped:
        week = monday(r["day"] or "")
        if week is None:
            continue
        key = (week, str(r[by]) if by else "all")
        per_week[key] = per_week.get(key, 0) + int(r["day_count"])
    all_weeks = sorted({w for w, _ in per_week})[-WEEKS:]
    index = {w: i for i, w in enumerate(all_weeks)}
    series: dict[str, list[int]] = {}
    for (week, name), n in per_week.items():
        if week in index:
            series.setdefault(name, [0] * len(all_weeks))[index[week]] += n
    return {"weeks": all_weeks, "series": dict(sorted(series.items()))}


def brief(store: MemoryStore, ids: list[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    found = {m.id: m for m in store.query(is_in("id", ids), limit=len(ids))}
    return [
        {
            "id": m.id,
            "text": m.text,
            "kind": m.kind,
            "project": m.project,
            "hits": m.hits,
            "created_at": m.created_at,
            "last_used_at": m.last_used_at,
        }
        for i in ids
        if (m := found.get(i)) is not None
    ]


_CACHE: dict[str, tuple[int, int, Any]] = {}
_CACHE_LOCK = threading.Lock()
_REFRESHING: set[str] = set()


def cached(
    store: MemoryStore, name: str, compute: Callable[[], Any], stale_ok: bool = False
) -> Any:
    """``compute()``, reused until this process changes the store (``store.mutations``).

    In the daemon, the only writer, that is exact: any write, hit flush or job bumps it. With
    ``stale_ok`` an outdated value is returned at once while one background thread recomputes
    it (the UI's dashboards: figures a moment old rather than a page that waits)."""
    key = (id(store), store.mutations)
    with _CACHE_LOCK:
        hit = _CACHE.get(name)
        if hit is not None and hit[:2] == key:
            return hit[2]
        if stale_ok and hit is not None and hit[0] == key[0]:
            if name not in _REFRESHING:
                _REFRESHING.add(name)
                threading.Thread(
                    target=_refresh, args=(name, key, compute), name="memd-stats", daemon=True
                ).start()
            return hit[2]
    value = compute()
    with _CACHE_LOCK:
        _CACHE[name] = (*key, value)
    return value


def _refresh(name: str, key: tuple[int, int], compute: Callable[[], Any]) -> None:
    try:
        value = compute()
        with _CACHE_LOCK:
            _CACHE[name] = (*key, value)
    except Exception as exc:  # the stale value stays; the next request tries again
        log.warning("recomputing %s failed: %s", name, exc)
    finally:
        with _CACHE_LOCK:
            _REFRESHING.discard(name)


def collect(store: MemoryStore, home: Path, top: int = 5) -> dict[str, Any]:
    """Everything `memd stats` prints: counts, per project, weekly growth, hits, disk use."""
    out: dict[str, Any] = {
        "computed_at": now_iso(),
        "total": 0,
        "active": 0,
        "by_project": {},
        "by_kind": {},
        "by_status": {},
        "projects": [],
        "growth": {"weeks": [], "series": {}},
        "archived_per_week": {"weeks": [], "series": {}},
        "used_per_week": {"weeks": [], "series": {}},
        "hits": {"total": 0, "used": 0, "buckets": []},
        "most_used": [],
        "least_used": [],
        "store_bytes": dir_size(home / "store"),
        "journal_bytes": file_size(home / "journal.jsonl"),
    }
    table = scan(store, SCAN_COLUMNS)
    if table is None:
        return out
    out["total"] = table.num_rows
    out["by_project"] = counts(table, "project")
    out["by_kind"] = counts(table, "kind")
    out["by_status"] = counts(table, "status")
    out["active"] = out["by_status"].get("active", 0)
    out["projects"] = per_project(table)
    out["growth"] = weekly(table, "created_at", by="kind")
    archived = table.filter(pc.equal(table.column("status"), "archived"))
    out["archived_per_week"] = weekly(archived, "updated_at")
    used = table.filter(pc.not_equal(table.column("last_used_at"), ""))
    out["used_per_week"] = weekly(used, "last_used_at")
    hits = table.column("hits")
    out["hits"] = {
        "total": int(pc.sum(hits).as_py() or 0),
        "used": int(pc.sum(pc.greater(hits, 0)).as_py() or 0),
        "buckets": hit_buckets(hits),
    }
    used_ones = table.filter(pc.greater(hits, 0))  # "most used": never a memory with 0 hits
    out["most_used"] = brief(
        store, top_ids(used_ones, top, [("hits", "descending"), ("updated_at", "descending")])
    )
    active = table.filter(pc.equal(table.column("status"), "active"))
    out["least_used"] = brief(
        store, top_ids(active, top, [("hits", "ascending"), ("created_at", "ascending")])
    )
    return out


def top_ids(table: pa.Table, k: int, keys: list[tuple[str, str]]) -> list[str]:
    """The ids of the first ``k`` rows in ``keys`` order, without sorting the whole table."""
    if table.num_rows == 0:
        return []
    picked = table.take(pc.select_k_unstable(table, min(k, table.num_rows), keys))
    return [str(i) for i in picked.sort_by(keys).column("id").to_pylist()]


def hit_buckets(hits: pa.ChunkedArray) -> list[dict[str, Any]]:
    out = []
    for low, high in HIT_BUCKETS:
        mask = pc.greater_equal(hits, low)
        if high is not None:
            mask = pc.and_(mask, pc.less_equal(hits, high))
        label = str(low) if low == high else (f"{low}+" if high is None else f"{low}-{high}")
        out.append({"label": label, "count": int(pc.sum(mask).as_py() or 0)})
    return out


def per_project(table: pa.Table) -> list[dict[str, Any]]:
    """Each project: counts by kind and status, hits, last activity (newest update or use)."""
    kinds = table.group_by(["project", "kind"]).aggregate([("id", "count")]).to_pylist()
    statuses = table.group_by(["project", "status"]).aggregate([("id", "count")]).to_pylist()
    last = pc.max_element_wise(table.column("updated_at"), table.column("last_used_at"))
    t = pa.table({"project": table.column("project"), "last": last, "hits": table.column("hits")})
    agg = t.group_by("project").aggregate([("last", "max"), ("hits", "sum"), ("project", "count")])
    rows: dict[str, dict[str, Any]] = {}
    for r in agg.to_pylist():
        rows[r["project"]] = {
            "project": r["project"],
            "total": int(r["project_count"]),
            "last_activity": r["last_max"] or "",
            "hits": int(r["hits_sum"] or 0),
            "by_kind": {},
            "by_status": {},
        }
    for r in kinds:
        rows[r["project"]]["by_kind"][r["kind"]] = int(r["id_count"])
    for r in statuses:
        rows[r["project"]]["by_status"][r["status"]] = int(r["id_count"])
    return sorted(rows.values(), key=lambda r: r["last_activity"], reverse=True)


def session_lines(
    store: MemoryStore, project: str | None
) -> tuple[pa.Table | None, pa.Table | None]:
    """Every (session, time, memory, project) of the memories' sources, and one row per session
    (first and last time, memories, project), newest first."""
    where = match(project=project) if project else None
    table = scan(store, ["id", "project", "kind", "status", "sources"], where)
    if table is None:
        return None, None
    src = table.column("sources").combine_chunks()
    parents = pc.list_parent_indices(src)
    flat = pc.list_flatten(src)
    lines = pa.table(
        {
            "session": flat.field("session_id"),
            "ts": flat.field("timestamp"),
            "id": pc.take(table.column("id"), parents),
            "project": pc.take(table.column("project"), parents),
            "excerpt": pc.equal(pc.take(table.column("kind"), parents), "excerpt"),
            "archived": pc.equal(pc.take(table.column("status"), parents), "archived"),
        }
    ).filter(pc.not_equal(flat.field("session_id"), ""))
    if lines.num_rows == 0:
        return None, None
    grouped = lines.group_by("session").aggregate(
        [("ts", "min"), ("ts", "max"), ("id", "count_distinct"), ("project", "min")]
    )
    grouped = grouped.sort_by([("ts_max", "descending"), ("session", "ascending")])
    return lines, grouped


def sessions(
    store: MemoryStore,
    project: str | None = None,
    offset: int = 0,
    limit: int = 20,
    per_session: int = 12,
    stale_ok: bool = False,
) -> dict[str, Any]:
    """Sessions newest first, each with what it taught: its typed memories first (``learned``),
    then its excerpts apart (``excerpts``, at most ``per_session`` of each), with the counts of
    both and of its archived memories (from the memories' sources)."""
    lines, grouped = cached(
        store, f"sessions:{project or ''}", lambda: session_lines(store, project), stale_ok
    )
    if grouped is None:
        return {"sessions": [], "total": 0}
    total = grouped.num_rows
    chosen = grouped.slice(offset, limit).to_pylist()
    names = [r["session"] for r in chosen]
    picked = lines.filter(pc.is_in(lines.column("session"), pa.array(names, pa.string())))
    picked = picked.sort_by([("ts", "ascending")]).to_pylist()
    ids_of: dict[tuple[str, bool], list[str]] = {}
    counted: dict[tuple[str, str], set[str]] = {}
    for row in picked:
        got = ids_of.setdefault((row["session"], row["excerpt"]), [])
        if row["id"] not in got and len(got) < per_session:
            got.append(row["id"])
        what = "excerpts" if row["excerpt"] else "typed"
        counted.setdefault((row["session"], what), set()).add(row["id"])
        if row["archived"]:
            counted.setdefault((row["session"], "archived"), set()).add(row["id"])
    wanted = sorted({i for ids in ids_of.values() for i in ids})
    found = {m.id: m for m in store.query(is_in("id", wanted), limit=max(1, len(wanted)))}

    def shown(session: str, excerpt: bool) -> list[dict[str, Any]]:
        return [
            {"id": m.id, "kind": m.kind, "text": m.text, "status": m.status}
            for i in ids_of.get((session, excerpt), [])
            if (m := found.get(i)) is not None
        ]

    out = []
    for r in chosen:
        name = r["session"]
        out.append(
            {
                "session_id": name,
                "project": r["project_min"],
                "first": r["ts_min"],
                "last": r["ts_max"],
                "memories": int(r["id_count_distinct"]),
                "learned": shown(name, False),
                "excerpts": shown(name, True),
                "typed_count": len(counted.get((name, "typed"), ())),
                "excerpt_count": len(counted.get((name, "excerpts"), ())),
                "archived_count": len(counted.get((name, "archived"), ())),
            }
        )
    return {"sessions": out, "total": total}
