"""The pull half of a sync round: every device's rows past its cursor (this device's own table
first), the winners decided against the local versions (the greatest ``(clock, device)`` wins,
a local version not pushed yet included), written to the store a batch at a time.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memd.models import Memory, now_iso
from memd.store.filters import is_in
from memd.sync.changes import bump, fetch_changes, fingerprint, memory_from_row, norm_time, payload
from memd.sync.state import Known, SyncProject, SyncState

if TYPE_CHECKING:
    from memd.settings import Settings
    from memd.store.table import MemoryStore

APPLY_CHUNK = 256
"""Received memories applied per batch: the store's write lock is held for one batch at a time."""


class SyncPull:
    """The pull side of :class:`memd.sync.engine.SyncEngine` (and the clock rule its push shares)."""

    settings: Settings
    state: SyncState
    device: str

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
            text = self.received(row, by_portable[row["project"]].path).text
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
            memory = self.received(row, project.path)
            if mine is not None:  # local counters stay local
                memory.hits, memory.last_used_at = mine.hits, mine.last_used_at
                memory.score = mine.score if mine.text == memory.text else memory.importance
                if mine.text == memory.text:  # (not synced: an extractor's subject and value)
                    memory.subject, memory.value = mine.subject, mine.value
            puts.append(memory)
            fp = fingerprint(payload(memory, project.portable, self.settings.redact_patterns))
            learned[mid] = Known(row["clock"], row["device"], fp, False, row["project"])
        return puts, deletes, learned

    def received(self, row: dict[str, Any], local_project: str) -> Memory:
        """An incoming row as the memory stored here, redacted by this device's rules: another
        device (an older memd, other patterns) may have sent what this one would not keep."""
        memory = memory_from_row(row, local_project)
        fields = payload(memory, "", self.settings.redact_patterns)
        memory.text, memory.topic = fields["text"], fields["topic"]
        memory.keywords, memory.history = fields["keywords"], json.loads(fields["history"])
        return memory

    def dirty(self, memory: Memory, project: SyncProject, known: Known) -> bool:
        fp = fingerprint(payload(memory, project.portable, self.settings.redact_patterns))
        return fp != known.fp

    def clock_for(self, memory: Memory, known: Known | None) -> str:
        """The clock of a local version: its update time, past the version it was made from."""
        clock = norm_time(memory.updated_at)
        if known is not None and clock <= known.clock:
            clock = bump(known.clock)
        return clock
