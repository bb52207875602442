"""The daemon's in-memory index of every memory's list keys, kept in step with each write.

A page of the memory list (`memd ui`, `memd list`) needs the ids of the matching memories in
sort order and how many match; `status` and the Health page need counts by project, kind and
status. Reading those keys from the table is a scan of every row: ~300 ms at 100k right after a
write, when LanceDB loads the new table version. This index keeps them in numpy arrays (~4 MB
at 100k), built once with one scan under the store's write lock, then updated by the store
itself on every write, delete and hit-count update (``MemoryStore`` calls :meth:`put`,
:meth:`remove`, :meth:`touched` and :meth:`carry`).

Exactness: the index answers for one state of the table, the store's ``mutations`` counter (the
same signal the vector cache trusts). A change applied here moves it along with the store only
when it was exact just before that change; anything that changes the table without a delta here
(a reindex, a rebuild from the journal, a failed write, another open) leaves it behind, and the
next read rebuilds it from the table. So an answer is never a stale figure.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memd.errors import UserError
from memd.heap import trim_heap
from memd.models import USER_SCOPE
from memd.store.sortkeys import Codes, id_key, id_keys, regular, stamp_ms, stamps_column

if TYPE_CHECKING:
    from memd.models import Memory
    from memd.store.table import MemoryStore

KEY_COLUMNS = ["id", "project", "kind", "status", "pinned", "created_at", "updated_at", "hits"]
ORDERS: dict[str, tuple[tuple[str, bool], ...]] = {
    "kind": (("pinned", True), ("kind", False), ("created", False)),
    "recent": (("updated", True),),
    "hits": (("hits", True), ("updated", True)),
}
"""(key, descending) per order, as ``memd.store.curate.ORDERS``; the id (ascending) breaks ties."""
SORTED_KEPT = 4
"""Filtered listings kept per table state (a listing's next pages are then a slice)."""
RESORT_AFTER = 256
"""Rows changed at once beyond which an order is sorted again instead of patched."""
MEMO_MAX = 4096


class KeyIndex:
    """Every memory's id, project, kind, status, pin, created/updated time and hits, in memory."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.synced: int | None = None
        """The store's ``mutations`` at which the arrays are exact (None: not built)."""
        self.builds = 0
        self.changes = 0
        """Bumped by every change applied here (the filtered listings' key)."""
        self.content = 0
        """Bumped when a memory's text, project, kind or status may have changed, or one comes
        or goes: not by a pin, an edit of importance or a hit count (see :meth:`memo`)."""
        self._lock = threading.Lock()
        self._sorted: OrderedDict[tuple[Any, ...], tuple[int, np.ndarray]] = OrderedDict()
        self._orders: dict[str, tuple[np.ndarray, set[int], int]] = {}
        """Per order: every live row in that order, the rows changed since (patched in on the
        next read), and how many kinds there were when it was sorted."""
        self._memo: tuple[int, dict[Any, Any]] = (-1, {})
        self._reset()

    # ---- storage
    def _reset(self, capacity: int = 1024) -> None:
        self.n = 0
        self.by_key = np.zeros(0, dtype=np.uint64)
        self.by_key_row = np.zeros(0, dtype=np.int64)
        """The regular ids' keys, sorted, and their rows: the id -> row lookup."""
        self.odd: dict[int, str] = {}
        self.odd_row: dict[str, int] = {}
        """Ids memd did not make (imported ones of another shape), by row and back."""
        self.projects = Codes()
        self.kinds = Codes()
        self.statuses = Codes()
        self.project = np.zeros(capacity, dtype=np.int32)
        self.kind = np.zeros(capacity, dtype=np.int16)
        self.status = np.zeros(capacity, dtype=np.int16)
        self.pinned = np.zeros(capacity, dtype=bool)
        self.created = np.zeros(capacity, dtype=np.int64)
        self.updated = np.zeros(capacity, dtype=np.int64)
        self.hits = np.zeros(capacity, dtype=np.int64)
        self.idkey = np.zeros(capacity, dtype=np.uint64)
        self.live = np.zeros(capacity, dtype=bool)
        self._sorted.clear()
        self._orders.clear()
        self.content += 1

    COLUMNS: tuple[str, ...] = (
        "project",
        "kind",
        "status",
        "pinned",
        "created",
        "updated",
        "hits",
        "idkey",
    )
    COLUMNS += ("live",)

    def _grow(self, need: int) -> None:
        capacity = len(self.live)
        if need <= capacity:
            return
        capacity = max(need, capacity * 2)
        for name in self.COLUMNS:
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _changed(self, rows: Iterable[int]) -> None:
        """Note rows whose keys changed, for each kept order to patch them in."""
        rows = list(rows)
        for order, kept in list(self._orders.items()):
            kept[1].update(rows)
            if len(kept[1]) > RESORT_AFTER:
                del self._orders[order]

    def _find(self, mid: str) -> int | None:
        """The row of ``mid`` (live or not), or None."""
        if not regular(mid):
            return self.odd_row.get(mid)
        key = np.uint64(int(mid, 16))
        at = int(np.searchsorted(self.by_key, key))
        if at < len(self.by_key) and self.by_key[at] == key:
            return int(self.by_key_row[at])
        return None

    def _id(self, row: int) -> str:
        odd = self.odd.get(row)
        return odd if odd is not None else format(int(self.idkey[row]), "016x")

    def _live_rows(self, ids: Iterable[str]) -> list[int]:
        return [i for mid in ids if (i := self._find(mid)) is not None and self.live[i]]

    def _add_keys(self, keys: list[int], rows: list[int]) -> None:
        order = np.argsort(np.array(keys, dtype=np.uint64))
        new_keys = np.array(keys, dtype=np.uint64)[order]
        at = np.searchsorted(self.by_key, new_keys)
        self.by_key = np.insert(self.by_key, at, new_keys)
        self.by_key_row = np.insert(self.by_key_row, at, np.array(rows, dtype=np.int64)[order])

    def _set(self, memory: Memory, same_text: bool, new: dict[str, int]) -> None:
        """Write one memory's keys; ``new``: regular ids given a row in this batch."""
        i = self._find(memory.id)
        if i is None:
            i = new.get(memory.id)
        if i is None:
            self._grow(self.n + 1)
            i = self.n
            self.n += 1
            self.idkey[i] = id_key(memory.id)
            if regular(memory.id):
                new[memory.id] = i
            else:
                self.odd[i] = memory.id
                self.odd_row[memory.id] = i
        before = (self.project[i], self.kind[i], self.status[i], self.live[i])
        self.project[i] = self.projects.code(memory.project)
        self.kind[i] = self.kinds.code(memory.kind)
        self.status[i] = self.statuses.code(memory.status)
        if not same_text or before != (self.project[i], self.kind[i], self.status[i], True):
            self.content += 1
        self.pinned[i] = bool(memory.pinned)
        self.created[i] = stamp_ms(memory.created_at)
        self.updated[i] = stamp_ms(memory.updated_at)
        self.hits[i] = int(memory.hits)
        self.live[i] = True
        self._changed([i])

    def _build(self) -> None:
        """Read every row's keys from the table (the caller holds the store's write lock)."""
        table = self.store.table
        count = self.store.count() if table is not None else 0
        self._reset(max(1024, count + count // 4))
        if count:
            arrow = table.search().select(KEY_COLUMNS).limit(count).to_arrow()
            n = self.n = arrow.num_rows
            keys, plain = id_keys(arrow.column("id").combine_chunks())
            self.idkey[:n] = keys
            rows = np.flatnonzero(plain)
            order = np.argsort(keys[rows])
            self.by_key, self.by_key_row = keys[rows][order], rows[order].astype(np.int64)
            for row in np.flatnonzero(~plain):
                mid = str(arrow.column("id")[int(row)].as_py())
                self.odd[int(row)] = mid
                self.odd_row[mid] = int(row)
            for name, codes, target in (
                ("project", self.projects, self.project),
                ("kind", self.kinds, self.kind),
                ("status", self.statuses, self.status),
            ):
                encoded = arrow.column(name).combine_chunks().dictionary_encode()
                for value in encoded.dictionary.to_pylist():
                    codes.code(str(value))
                mapping = np.array(
                    [codes.index[str(v)] for v in encoded.dictionary.to_pylist()] or [0]
                )
                target[:n] = mapping[encoded.indices.to_numpy(zero_copy_only=False)]
            self.pinned[:n] = arrow.column("pinned").to_numpy(zero_copy_only=False).astype(bool)
            self.hits[:n] = arrow.column("hits").fill_null(0).to_numpy(zero_copy_only=False)
            self.created[:n] = stamps_column(arrow.column("created_at"))
            self.updated[:n] = stamps_column(arrow.column("updated_at"))
            self.live[:n] = True
            del arrow
            if n >= 1000:
                trim_heap()  # the scan's buffers, back to the OS
        self.synced = self.store.mutations
        self.builds += 1
        self.changes += 1

    def ensure(self) -> None:
        """Build (or rebuild) the index when it is not exact for the table as it is now."""
        if self.synced == self.store.mutations:
            return
        with self.store.write_lock, self._lock:  # no write between the scan and the mark
            if self.synced != self.store.mutations:
                self._build()

    # ---- deltas, called by the store under its write lock after the table changed
    def _apply(self, before: int) -> bool:
        """True when the index was exact at ``before`` and so may take this change."""
        if self.synced != before:
            self.synced = None  # left behind: rebuilt on the next read
            return False
        return True

    def _done(self) -> None:
        self.synced = self.store.mutations
        self.changes += 1

    def put(self, memories: Iterable[Memory], before: int, same_text: bool = False) -> None:
        """Memories written (new or changed) by a store write that began at ``before``;
        ``same_text``: the writer changed no text (a pin, a status, an importance)."""
        with self._lock:
            if self._apply(before):
                new: dict[str, int] = {}
                for memory in memories:
                    self._set(memory, same_text, new)
                if new:
                    self._add_keys([int(mid, 16) for mid in new], list(new.values()))
                self._done()

    def remove(self, ids: Iterable[str], before: int) -> None:
        with self._lock:
            if self._apply(before):
                gone = self._live_rows(ids)  # a row stays, dead: the same id may come back
                self.live[gone] = False
                self._changed(gone)
                self.content += bool(gone)
                self._done()

    def touched(self, ids: Iterable[str], before: int) -> None:
        """hits + 1 (the hit counters; ``last_used_at`` is not a key here)."""
        with self._lock:
            if self._apply(before):
                rows = self._live_rows(ids)
                self.hits[rows] += 1
                self._changed(rows)
                self._done()

    def carry(self, before: int) -> None:
        """The store's counter moved but no row changed (an optimize)."""
        with self._lock:
            if self.synced == before:
                self.synced = self.store.mutations

    # ---- reads
    def _mask(
        self,
        projects: Sequence[str] | None,
        kind: str | tuple[str, ...] | None,
        status: str | None,
        pinned: bool | None,
    ) -> np.ndarray:
        n = self.n
        mask = self.live[:n].copy()
        if projects is not None:
            wanted = [self.projects.index[p] for p in projects if p in self.projects.index]
            mask &= np.isin(self.project[:n], np.array(wanted or [-1], dtype=np.int32))
        for value, codes, column in (
            (kind, self.kinds, self.kind),
            (status, self.statuses, self.status),
        ):
            if isinstance(value, tuple):  # several kinds: any of them
                wanted = [codes.index[v] for v in value if v in codes.index]
                mask &= np.isin(column[:n], np.array(wanted or [-1], dtype=column.dtype))
            elif value is not None:
                code = codes.index.get(value)
                if code is None:
                    return np.zeros(n, dtype=bool)
                mask &= column[:n] == code
        if pinned is not None:
            mask &= self.pinned[:n] == pinned
        return mask

    def _values(self, name: str, rows: Any, rank: np.ndarray) -> Any:
        if name == "kind":
            return rank[self.kind[rows]]
        if name == "pinned":
            return self.pinned[rows].astype(np.int64)
        return getattr(self, name)[rows]

    def _sort(self, rows: np.ndarray, order: str) -> np.ndarray:
        rank = self.kinds.rank()
        keys: list[np.ndarray] = [self.idkey[rows]]  # np.lexsort: the last key sorts first
        for name, descending in reversed(ORDERS[order]):
            values = self._values(name, rows, rank)
            keys.append(-values if descending else values)
        return rows[np.lexsort(keys)]

    def _ordered(self, order: str) -> np.ndarray:
        """Every live row in ``order``: sorted once, then patched with the rows that changed
        (a pin, an edit, a hit count: a few binary searches instead of sorting 100k rows)."""
        kept = self._orders.get(order)
        if kept is None or kept[2] != len(self.kinds.names):
            ranked = self._sort(np.flatnonzero(self.live[: self.n]), order)
            self._orders[order] = (ranked, set(), len(self.kinds.names))
            return ranked
        ranked, dirty, kinds = kept
        if dirty:
            rows = np.fromiter(dirty, dtype=np.int64, count=len(dirty))
            ranked = ranked[~np.isin(ranked, rows)]
            rank = self.kinds.rank()

            def key(row: Any) -> tuple[Any, ...]:
                values = [self._values(name, row, rank) for name, _ in ORDERS[order]]
                signed = [
                    -v if desc else v for v, (_, desc) in zip(values, ORDERS[order], strict=True)
                ]
                return (*[int(v) for v in signed], int(self.idkey[row]))

            for row in sorted(int(r) for r in rows if self.live[r]):
                at = bisect.bisect_left(ranked, key(row), key=key)
                ranked = np.insert(ranked, at, row)
            self._orders[order] = (ranked, set(), kinds)
        return ranked

    def page(
        self,
        projects: Sequence[str] | None,
        kind: str | tuple[str, ...] | None,
        status: str | None,
        pinned: bool | None,
        offset: int,
        limit: int,
        order: str,
    ) -> tuple[list[str], int]:
        """The ids of one page of the matching memories in ``order``, and how many match."""
        if order not in ORDERS:
            raise UserError(f"unknown order {order!r}; choose one of: {', '.join(ORDERS)}")
        self.ensure()
        with self._lock:
            scope = tuple(sorted(projects)) if projects is not None else None
            key = (scope, kind, status, pinned, order)
            hit = self._sorted.get(key)
            if hit is not None and hit[0] == self.changes:
                ranked = hit[1]
                self._sorted.move_to_end(key)
            else:
                ordered = self._ordered(order)
                ranked = ordered[self._mask(projects, kind, status, pinned)[ordered]]
                self._sorted[key] = (self.changes, ranked)
                while len(self._sorted) > SORTED_KEPT:
                    self._sorted.popitem(last=False)
            chosen = ranked[offset : offset + limit]
            return [self._id(int(i)) for i in chosen], len(ranked)

    def counts(self) -> dict[str, Any]:
        """What ``MemoryStore.stats`` answers: total, by project, by kind, by status, active."""
        self.ensure()
        with self._lock:
            live = self.live[: self.n]
            out: dict[str, Any] = {"total": int(live.sum())}
            for name, codes, column in (
                ("by_project", self.projects, self.project),
                ("by_kind", self.kinds, self.kind),
                ("by_status", self.statuses, self.status),
            ):
                tally = np.bincount(column[: self.n][live], minlength=len(codes.names))
                out[name] = {
                    codes.names[c]: int(tally[c])
                    for c in sorted(range(len(codes.names)), key=codes.names.__getitem__)
                    if tally[c]
                }
            out["active"] = out["by_status"].get("active", 0)
            return out

    def memo(self) -> dict[Any, Any] | None:
        """A dict for figures that depend only on the memories' texts, projects, kinds and
        statuses (a search's document frequencies), valid until one of those changes; None
        when the index is not exact now."""
        self.ensure()
        with self._lock:
            if self.synced != self.store.mutations:
                return None
            if self._memo[0] != self.content or len(self._memo[1]) > MEMO_MAX:
                self._memo = (self.content, {})
            return self._memo[1]

    def project_names(self) -> list[str]:
        """Every project with memories, the user-wide scope first."""
        names = list(self.counts()["by_project"])
        return sorted(names, key=lambda p: (p != USER_SCOPE, p))
