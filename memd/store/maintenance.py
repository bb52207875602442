"""The maintenance algorithms: decay, dedupe, cleanup and optimize, one function each.

Each job is a plain function ``job(store, settings) -> dict`` (the dict is its result, kept in
memd's state and shown by ``memd jobs``); :data:`JOBS` names them for :mod:`memd.daemon.jobs`, which
schedules them in the daemon.

Rules every job keeps:

- **Pinned memories are never decayed, archived, closed or superseded.** A pinned memory may only
  absorb a duplicate in dedupe (it is always the survivor; its text, importance, score and status
  stay as they are, its sources and history grow).
- Nothing is deleted: duplicates become ``superseded``, stale memories become ``archived`` and are
  appended to the readable archive file first.
- A job's read-modify-write holds the store's write lock, so it never interleaves with the daemon's
  writes; all of a job's changes go out as one batch.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memd import kinds
from memd.models import Memory, now_iso
from memd.store import archive, profiles, similar
from memd.store.filters import Filter, clause, match
from memd.store.table import MemoryStore
from memd.store.todos import done_todos
from memd.store.upsert import fold_duplicate
from memd.timestamps import parse_time

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

JobFunction = Callable[[MemoryStore, "Settings"], dict[str, Any]]

DEFAULT_HALF_LIFE_DAYS = 90.0
"""Half-life of a kind memd does not know (a row written by a newer version)."""
MAX_USE_BOOST = 1.5
SCORE_EPSILON = 0.002
"""Decay writes a score back only when it moved by more than this and by more than 2%."""
MIN_SCORE = 0.0001
DEDUPE_BLOCK = 512
UPDATE_CHUNK = 5000
RESULT_LIST_MAX = 20
DURABLE = frozenset(kinds.names("durable"))
"""Kinds that stay true until something replaces them: never archived for their age alone,
and the last a full project gives up."""


# ---- shared pieces


@contextmanager
def exclusive(store: MemoryStore) -> Iterator[None]:
    """Hold the store's (re-entrant) write lock for a whole read-modify-write."""
    with store.write_lock:
        yield


def last_active(memory: Memory) -> datetime:
    """The latest sign of life: created, updated (merged, edited, restored) or used."""
    stamps = [parse_time(s) for s in (memory.created_at, memory.updated_at, memory.last_used_at)]
    known = [s for s in stamps if s is not None]
    return max(known) if known else datetime.fromtimestamp(0, UTC)


def idle_days(memory: Memory, now: datetime) -> float:
    return max(0.0, (now - last_active(memory)).total_seconds() / 86400)


def half_life_of(kind: str, settings: Settings) -> float:
    """A kind's half-life in days: the setting's, else the kind's own (:mod:`memd.kinds`)."""
    spec = kinds.BY_NAME.get(kind)
    default = spec.half_life_days if spec is not None else DEFAULT_HALF_LIFE_DAYS
    return float(settings.half_life_days.get(kind, default))


def effective_score(memory: Memory, settings: Settings, now: datetime) -> float:
    """importance × 0.5^(idle days / half-life of the kind) × use boost, capped at 1.

    The use boost is ``1 + 0.15·log2(1 + hits)``, at most 1.5. A memory that is used, merged or
    restored becomes fresh again. Pinned memories keep their score: callers skip them.
    """
    half_life = half_life_of(memory.kind, settings)
    freshness = math.pow(0.5, idle_days(memory, now) / max(half_life, 1e-6))
    boost = min(MAX_USE_BOOST, 1.0 + 0.15 * math.log2(1 + max(0, memory.hits)))
    # Never exactly 0: Memory treats a zero score as "unset" and falls back to the importance.
    return max(MIN_SCORE, round(min(1.0, memory.importance * freshness * boost), 4))


def moved(old: float, new: float) -> bool:
    delta = abs(new - old)
    return delta > SCORE_EPSILON and delta > 0.02 * abs(old)


def projects(store: MemoryStore) -> list[str]:
    return sorted(store.stats()["by_project"])


def active_in(store: MemoryStore, project: str, extra: Filter | None = None) -> list[Memory]:
    where = match(project=project, status="active")
    return store.query(where & extra if extra else where)


def update_in_chunks(store: MemoryStore, updates: dict[str, dict[str, Any]]) -> None:
    items = list(updates.items())
    for start in range(0, len(items), UPDATE_CHUNK):
        store.update_fields(dict(items[start : start + UPDATE_CHUNK]))


def clip(values: list[Any]) -> list[Any]:
    return values[:RESULT_LIST_MAX]


# ---- decay


def decay(store: MemoryStore, settings: Settings, now: datetime | None = None) -> dict[str, Any]:
    """Recompute the score of every active, unpinned memory; write back only real changes."""
    now = now or datetime.now(UTC)
    scanned = 0
    updates: dict[str, dict[str, Any]] = {}
    with exclusive(store):
        for project in projects(store):
            for memory in active_in(store, project, match(pinned=False)):
                scanned += 1
                score = effective_score(memory, settings, now)
                if moved(memory.score, score):
                    updates[memory.id] = {"score": score}
        update_in_chunks(store, updates)
    return {"scanned": scanned, "updated": len(updates)}


# ---- dedupe


def survivor_order(memory: Memory) -> tuple[bool, float, str, str]:
    """Pinned first, then the more important, then the older."""
    return (not memory.pinned, -memory.importance, memory.created_at, memory.id)


def dedupe(store: MemoryStore, settings: Settings) -> dict[str, Any]:
    """Merge near-duplicates (same project and kind) that slipped past insert-time dedupe.

    The survivor keeps the union of sources, the sum of hits and a history entry; the loser stays
    in the table as ``superseded`` (``superseded_by`` = survivor) so its history remains viewable.
    """
    scanned = 0
    pairs: list[list[str]] = []
    changed: dict[str, Memory] = {}
    vectors: dict[str, Any] = {}
    with exclusive(store):
        for project in projects(store):
            memories = active_in(store, project, clause("kind != ?", "excerpt"))
            scanned += len(memories)
            by_kind: dict[str, list[Memory]] = {}
            for m in memories:
                by_kind.setdefault(m.kind, []).append(m)
            for group in by_kind.values():
                if len(group) < 2:
                    continue
                group.sort(key=survivor_order)
                rows = store.rows_with_vectors(m.id for m in group)
                group = [m for m in group if m.id in rows]
                model_id = store.embedder.model_id
                for survivor, loser in duplicates(group, rows, model_id):
                    absorb(survivor, loser)
                    pairs.append([survivor.id, loser.id])
                    for m in (survivor, loser):
                        changed[m.id] = m
                        vectors[m.id] = rows[m.id]["vector"]
        store.write(list(changed.values()), vectors)
    return {"scanned": scanned, "merged": len(pairs), "pairs": clip(pairs)}


def duplicates(
    group: list[Memory], rows: dict[str, dict[str, Any]], model_id: str
) -> list[tuple[Memory, Memory]]:
    """(survivor, loser) pairs in a group sorted by :func:`survivor_order`; greedy, each loser once.

    The same decision as on insert (:func:`memd.store.similar.is_duplicate`); the cosine matrix only
    pre-filters pairs above the model's floor (:func:`memd.store.profiles.candidate_floor`).
    Similarities are computed DEDUPE_BLOCK rows at a time, so memory stays O(block × n).
    """
    floor = profiles.candidate_floor(model_id)
    matrix = np.asarray([rows[m.id]["vector"] for m in group], dtype=np.float32)
    gone: set[int] = set()
    found = []
    for start in range(0, len(group), DEDUPE_BLOCK):
        sims = matrix[start : start + DEDUPE_BLOCK] @ matrix.T
        for offset, row in enumerate(sims):
            i = start + offset
            if i in gone:
                continue
            for j in (np.nonzero(row[i + 1 :] >= floor)[0] + i + 1).tolist():
                if j in gone or group[j].pinned:
                    continue
                if similar.is_duplicate(group[i].text, group[j].text, float(row[j]), model_id):
                    gone.add(j)
                    found.append((group[i], group[j]))
    return found


def absorb(survivor: Memory, loser: Memory) -> None:
    """Fold ``loser`` into ``survivor`` and mark it superseded."""
    importance = survivor.importance
    fold_duplicate(survivor, loser)
    survivor.hits += loser.hits
    survivor.history[-1]["by"] = "dedupe"
    if survivor.pinned:
        survivor.importance = importance  # pinned: only provenance and history grow
    if loser.last_used_at > survivor.last_used_at:
        survivor.last_used_at = loser.last_used_at
    loser.status = "superseded"
    loser.superseded_by = survivor.id
    loser.updated_at = survivor.updated_at
    loser.history.append({"at": loser.updated_at, "merged_into": survivor.id, "by": "dedupe"})


# ---- cleanup


def cleanup(store: MemoryStore, settings: Settings, now: datetime | None = None) -> dict[str, Any]:
    """Close done TODOs, archive stale memories (never the durable kinds), then enforce the
    per-project cap (the durable kinds last).

    Every archived memory is first appended to ``$MEMD_HOME/archive/<YYYY-MM>.md``.
    """
    now = now or datetime.now(UTC)
    at = now_iso()
    entries: list[archive.ArchiveEntry] = []
    closed: list[str] = []
    stale: list[str] = []
    evicted: list[str] = []
    updates: dict[str, dict[str, Any]] = {}

    def retire(memory: Memory, reason: str, event: dict[str, Any]) -> None:
        entries.append(archive.ArchiveEntry(memory, reason))
        updates[memory.id] = {
            "status": "archived",
            "updated_at": at,
            "history": [*memory.history, {"at": at, "by": "cleanup", **event}],
        }

    with exclusive(store):
        for project in projects(store):
            for todo, later in done_todos(store, project):
                closed.append(todo.id)
                retire(
                    todo,
                    f"done: {later.kind} {later.id} says {later.text[:200]!r}",
                    {"done": later.id, "text": later.text[:500]},
                )
            active = [m for m in active_in(store, project) if m.id not in updates]
            scores = {m.id: effective_score(m, settings, now) for m in active if not m.pinned}
            for m in active:
                if (
                    m.pinned
                    or m.kind in DURABLE
                    or scores[m.id] >= settings.archive_score_threshold
                ):
                    continue  # durable knowledge is never archived for its age alone
                idle = idle_days(m, now)
                if idle >= settings.archive_unused_days:
                    stale.append(m.id)
                    retire(
                        m,
                        f"score {scores[m.id]:.3f} under {settings.archive_score_threshold}, "
                        f"unused for {idle:.0f} days",
                        {"archived": "stale", "score": scores[m.id]},
                    )
            left = [m for m in active if m.id not in updates]
            excess = len(left) - settings.project_cap
            if excess > 0:
                candidates = sorted(
                    (m for m in left if not m.pinned),
                    key=lambda m: (m.kind in DURABLE, scores[m.id], m.created_at, m.id),
                )
                for m in candidates[:excess]:
                    evicted.append(m.id)
                    retire(
                        m,
                        f"project cap {settings.project_cap}: lowest score {scores[m.id]:.3f}",
                        {"archived": "cap", "score": scores[m.id]},
                    )
        path = archive.append(settings.home, entries, now, at)
        update_in_chunks(store, updates)
    return {
        "todos_closed": len(closed),
        "archived_stale": len(stale),
        "archived_cap": len(evicted),
        "archive_file": str(path) if path else None,
        "ids": clip(closed + stale + evicted),
    }


# ---- optimize


def optimize(store: MemoryStore, settings: Settings) -> dict[str, Any]:
    """Compact, drop old versions, refresh indexes (the store holds its write lock and retries)."""
    return store.optimize()


JOBS: dict[str, JobFunction] = {
    "decay": decay,
    "dedupe": dedupe,
    "cleanup": cleanup,
    "optimize": optimize,
}
