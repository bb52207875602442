"""Browsing and curating memories by hand: pages of a filtered list, edits, excerpts.

``App`` calls these (``list``, ``edit``, ``show``; archiving is :mod:`memd.store.forgetting`); ``memd ui`` reaches them over the
socket. A page reads the sort keys of the matching rows only, then the full rows of one page, so
paging through 100k memories never materialises them all.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memd.errors import UserError
from memd.extract.redact import redact
from memd.models import STATUSES, USER_SCOPE, Memory, check_kind, now_iso
from memd.store.filters import Filter, all_of, is_in, match
from memd.store.table import MemoryStore

ORDERS = {
    "kind": [("pinned", "descending"), ("kind", "ascending"), ("created_at", "ascending")],
    "recent": [("updated_at", "descending"), ("id", "ascending")],
    "hits": [("hits", "descending"), ("updated_at", "descending")],
}
"""``kind`` is `memd list`'s order: pinned first, then by kind, oldest first."""
MAX_PAGE = 1000
READ_AHEAD = 200
"""A page's top-k selection keeps this many more ids, so the next pages are a slice."""
EXCERPT_SCAN = 20_000
"""An excerpt lookup reads at most this many excerpt rows of the memory's project."""


def where_for(
    projects: list[str] | None,
    kind: str | tuple[str, ...] | None = None,
    status: str | None = None,
    pinned: bool | None = None,
) -> Filter | None:
    """The filter for a list page (``status`` None = every status; ``kind`` one kind or a
    tuple of kinds, any of them)."""
    parts = []
    if projects:
        parts.append(is_in("project", projects))
    if isinstance(kind, tuple):
        parts.append(is_in("kind", [check_kind(k) for k in kind] or [""]))
    elif kind:
        parts.append(match(kind=check_kind(kind)))
    if status:
        if status not in STATUSES:
            raise UserError(f"unknown status {status!r}; choose one of: {', '.join(STATUSES)}")
        parts.append(match(status=status))
    if pinned is not None:
        parts.append(match(pinned=pinned))
    return all_of(*parts) if parts else None


def page(
    store: MemoryStore, where: Filter | None, offset: int = 0, limit: int = 50, order: str = "kind"
) -> tuple[list[Memory], int]:
    """One page of the memories matching ``where`` and how many match in all."""
    if order not in ORDERS:
        raise UserError(f"unknown order {order!r}; choose one of: {', '.join(ORDERS)}")
    if offset < 0 or limit < 0:
        raise UserError("offset and limit must not be negative")
    if store.table is None or limit == 0:
        return [], store.count(where) if store.table is not None else 0
    from memd.store.stats import cached

    keys = cached(store, "page", lambda: {})  # {(where, order): (ids, total)} per store version
    want = offset + min(limit, MAX_PAGE)
    ids, total = keys.get((where, order), (None, 0))
    if ids is None or (len(ids) < want and len(ids) < total):
        ids, total = sorted_ids(store, where, order, want)
        keys.clear()  # one listing at a time: its next pages are then a slice
        keys[(where, order)] = (ids, total)
    chosen = ids.slice(offset, min(limit, MAX_PAGE)).to_pylist()
    if not chosen:
        return [], total
    rows = {m.id: m for m in store.query(is_in("id", chosen), limit=len(chosen))}
    return [rows[i] for i in chosen if i in rows], total


def list_page(
    store: MemoryStore,
    projects: list[str] | None,
    kind: str | tuple[str, ...] | None = None,
    status: str | None = None,
    pinned: bool | None = None,
    offset: int = 0,
    limit: int = 50,
    order: str = "kind",
) -> tuple[list[Memory], int]:
    """:func:`page` with the filters as values: from the daemon's key index when it has one
    (the ids of the page, then those rows only), else from the table."""
    where = where_for(projects, kind, status, pinned)  # checks kind and status
    if store.keys is None or store.table is None:
        return page(store, where, offset, limit, order)
    if offset < 0 or limit < 0:
        raise UserError("offset and limit must not be negative")
    chosen, total = store.keys.page(
        projects, kind, status, pinned, offset, min(limit, MAX_PAGE), order
    )
    if not chosen:
        return [], total
    rows = {m.id: m for m in store.query(is_in("id", chosen), limit=len(chosen))}
    return [rows[i] for i in chosen if i in rows], total


def sorted_ids(
    store: MemoryStore, where: Filter | None, order: str, k: int
) -> tuple[pa.Array, int]:
    """The first ``k`` ids (at least a few pages' worth) of the memories matching ``where`` in
    ``order``, and how many match: one scan of the sort keys and a top-k selection."""
    columns = ["id", *{key for key, _ in ORDERS[order]} - {"id"}]
    q = store.table.search().select(columns)
    if where:
        q = q.where(where.sql)
    table = q.limit(max(1, store.count())).to_arrow()
    total = table.num_rows
    if total == 0:
        return pa.array([], pa.string()), 0
    table, keys = as_times(table, ORDERS[order])
    k += READ_AHEAD
    if k < total // 4:
        table = table.take(pc.select_k_unstable(table, k, keys))
    return table.sort_by(keys).column("id").combine_chunks(), total


def as_times(
    table: pa.Table, keys: list[tuple[str, str]]
) -> tuple[pa.Table, list[tuple[str, str]]]:
    """Sort keys with the ISO ``*_at`` strings cast to timestamps (sorting 100k strings costs
    ~10x more); the strings stay when one does not parse."""
    out = []
    for name, direction in keys:
        if name.endswith("_at"):
            try:
                stamps = pc.cast(table.column(name), pa.timestamp("ms", tz="UTC"))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                out.append((name, direction))
                continue
            table = table.append_column(f"{name}_ts", stamps)
            name = f"{name}_ts"
        out.append((name, direction))
    return table, out


def edit(
    store: MemoryStore,
    id: str,
    *,
    text: str | None = None,
    kind: str | None = None,
    importance: float | None = None,
    redact_patterns: list[str] | None = None,
) -> Memory:
    """Change a memory's text, kind or importance; the old values go to its history.

    A new text is redacted and re-embedded; the id stays, so links and sources keep working.
    """
    with store.write_lock:
        memory = store.get(id)
        old: dict[str, Any] = {}
        if text is not None:
            clean = redact(text, redact_patterns or ()).strip()
            if not clean:
                raise UserError("memory text is empty")
            if clean != memory.text:
                old["text"] = memory.text
                memory.text = clean
        if kind is not None and kind != memory.kind:
            old["kind"] = memory.kind
            memory.kind = check_kind(kind)
        if importance is not None:
            value = float(importance)
            if not 0.0 <= value <= 1.0:
                raise UserError("importance must be between 0 and 1")
            if abs(value - memory.importance) > 1e-6:
                old["importance"] = round(memory.importance, 4)
                memory.importance = value
        if not old:
            return memory
        memory.updated_at = now_iso()
        memory.history.append({"at": memory.updated_at, "by": "edit", "was": old})
        vectors: dict[str, Any] = {}
        if "text" not in old:
            vectors = {memory.id: store.rows_with_vectors([memory.id])[memory.id]["vector"]}
        store.write([memory], vectors)  # a missing vector is embedded from the new text
        return memory


def excerpts_for(store: MemoryStore, memory: Memory, limit: int = 3) -> list[dict[str, Any]]:
    """Excerpt memories of the same project that cite one of ``memory``'s transcript lines."""
    uuids = {s.uuid for s in memory.sources if s.uuid}
    if not uuids or memory.kind == "excerpt" or store.table is None:
        return []
    where = match(kind="excerpt", project=[memory.project])
    arrow = (
        store.table.search()
        .select(["id", "sources"])
        .where(where.sql)
        .limit(max(1, min(EXCERPT_SCAN, store.count(where))))
        .to_arrow()
    )
    hits = []
    for row in arrow.to_pylist():
        cited = {s.get("uuid") for s in row.get("sources") or []}
        if cited & uuids:
            hits.append(row["id"])
            if len(hits) >= limit:
                break
    if not hits:
        return []
    found = store.query(is_in("id", hits), limit=len(hits))
    return [{"id": m.id, "text": m.text, "sources": [s.__dict__ for s in m.sources]} for m in found]


def projects_of(store: MemoryStore, stale_ok: bool = False) -> list[str]:
    """Every project with memories, the user-wide scope first."""
    from memd.store.stats import cached, scan

    if store.keys is not None and store.table is not None:
        return store.keys.project_names()  # the daemon: exact, from memory

    def compute() -> list[str]:
        table = scan(store, ["project"])
        names = set() if table is None else set(pc.unique(table.column("project")).to_pylist())
        return sorted(names, key=lambda p: (p != USER_SCOPE, p))

    return list(cached(store, "projects", compute, stale_ok))
