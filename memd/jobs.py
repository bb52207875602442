"""Scheduled maintenance: decay, dedupe, cleanup and optimize, and the scheduler that runs them.

Each job is a plain function ``job(store, settings) -> dict`` (the dict is its result, kept in
memd's state and shown by ``memd jobs``). :class:`Scheduler` runs them with APScheduler 3.x in the
daemon (``coalesce=True``, ``max_instances=1``, no job store; last runs live in :class:`State`).

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
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from memd import archive, similar
from memd.errors import UserError
from memd.filters import Filter, clause, match
from memd.merge import merge_into
from memd.models import JOB_NAMES, Memory, now_iso
from memd.store import MemoryStore
from memd.todos import done_todos

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

JobFunction = Callable[[MemoryStore, "Settings"], dict[str, Any]]

DEFAULT_HALF_LIFE_DAYS = 90.0
"""Half-life of a kind missing from ``settings.half_life_days``."""
MAX_USE_BOOST = 1.5
SCORE_EPSILON = 0.002
"""Decay writes a score back only when it moved by more than this and by more than 2%."""
MIN_SCORE = 0.0001
DEDUPE_BLOCK = 512
UPDATE_CHUNK = 5000
MISFIRE_GRACE_SECONDS = 120
CATCH_UP_DELAY_SECONDS = 60.0
"""After a restart, a job whose last run is overdue runs this long after start."""
RESULT_LIST_MAX = 20
WRITES_CHECK_SECONDS = 30.0


# ---- shared pieces


@contextmanager
def exclusive(store: MemoryStore) -> Iterator[None]:
    """Hold the store's (re-entrant) write lock for a whole read-modify-write."""
    with store.write_lock:
        yield


def parse_time(stamp: str) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def last_active(memory: Memory) -> datetime:
    """The latest sign of life: created, updated (merged, edited, restored) or used."""
    stamps = [parse_time(s) for s in (memory.created_at, memory.updated_at, memory.last_used_at)]
    known = [s for s in stamps if s is not None]
    return max(known) if known else datetime.fromtimestamp(0, UTC)


def idle_days(memory: Memory, now: datetime) -> float:
    return max(0.0, (now - last_active(memory)).total_seconds() / 86400)


def effective_score(memory: Memory, settings: Settings, now: datetime) -> float:
    """importance × 0.5^(idle days / half-life of the kind) × use boost, capped at 1.

    The use boost is ``1 + 0.15·log2(1 + hits)``, at most 1.5. A memory that is used, merged or
    restored becomes fresh again. Pinned memories keep their score: callers skip them.
    """
    half_life = float(settings.half_life_days.get(memory.kind, DEFAULT_HALF_LIFE_DAYS))
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

    The same decision as on insert (:func:`memd.similar.is_duplicate`); the cosine matrix only
    pre-filters pairs above the model's floor (:func:`memd.similar.candidate_floor`).
    Similarities are computed DEDUPE_BLOCK rows at a time, so memory stays O(block × n).
    """
    floor = similar.candidate_floor(model_id)
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
    merge_into(survivor, loser)
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
    """Close done TODOs, archive stale memories, then enforce the per-project cap.

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
                if m.pinned or scores[m.id] >= settings.archive_score_threshold:
                    continue
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
                    key=lambda m: (scores[m.id], m.created_at, m.id),
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


# ---- the scheduler


def iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def state_key(name: str) -> str:
    return f"jobs.{name}"


def jobs_status(
    state: Any, names: tuple[str, ...] = JOB_NAMES, next_runs: dict[str, str | None] | None = None
) -> list[dict[str, Any]]:
    """``[{name, next_run, last_run, last_status, last_result, ...}]`` from memd's state."""
    rows = []
    for name in names:
        record = state.get(state_key(name), None) or {}
        rows.append(
            {
                "name": name,
                "next_run": (next_runs or {}).get(name),
                "last_run": record.get("last_run"),
                "last_status": record.get("last_status"),
                "last_result": record.get("last_result"),
                "last_ok": record.get("last_ok"),
                "duration_s": record.get("duration_s"),
                "trigger": record.get("trigger"),
            }
        )
    return rows


class Scheduler:
    """Runs the maintenance jobs in the daemon with APScheduler 3.x (BackgroundScheduler).

    - One maintenance job runs at a time (a job lock); a failure is logged and recorded as
      ``last_status = "error: ..."`` and never stops the scheduler.
    - Last runs and results live in ``state`` (any object with ``get(key, default)`` and
      ``set(key, value)``, normally :class:`memd.state.State`) under ``jobs.<name>``.
    - After a restart, a job whose last run is overdue runs ``catch_up_delay`` seconds after start;
      an interval job that is not overdue keeps its rhythm (next run = last run + interval).
    - ``functions`` and ``triggers`` replace the default job functions or triggers (tests, tuning).
    """

    def __init__(
        self,
        app: Any,
        state: Any,
        settings: Settings | None = None,
        *,
        functions: dict[str, JobFunction] | None = None,
        triggers: dict[str, Any] | None = None,
        catch_up_delay: float = CATCH_UP_DELAY_SECONDS,
        writes_check: float = WRITES_CHECK_SECONDS,
    ) -> None:
        self.app = app
        self.state = state
        self.settings: Settings = settings or app.settings
        self.functions: dict[str, JobFunction] = {**JOBS, **(functions or {})}
        if getattr(self.settings, "sync_uri", None) and "sync" not in self.functions:
            from memd.sync import sync_job

            self.functions["sync"] = sync_job  # pushes and pulls; backs off after failures
        self._trigger_overrides = dict(triggers or {})
        self.catch_up_delay = catch_up_delay
        self.writes_check = writes_check
        self._scheduler: Any = None
        self._job_lock = threading.Lock()
        self.running_job: str | None = None
        self.started = False
        self.should_exit = False
        self._writes = 0

    # ---- lifecycle

    def triggers(self) -> dict[str, Any]:
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        s = self.settings
        default = {
            "decay": IntervalTrigger(minutes=s.decay_interval_minutes),
            "dedupe": CronTrigger(hour=s.dedupe_cron_hour, minute=0),
            "cleanup": CronTrigger(hour=s.cleanup_cron_hour, minute=0),
            "optimize": IntervalTrigger(minutes=s.optimize_interval_minutes),
        }
        if getattr(s, "sync_uri", None):
            default["sync"] = IntervalTrigger(minutes=s.sync_interval_minutes)
        return {**default, **self._trigger_overrides}

    def start(self) -> None:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler

        if self.started:
            return
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=len(self.functions))},
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": MISFIRE_GRACE_SECONDS,
            },
        )
        tz = self._scheduler.timezone
        now = datetime.now(tz)
        overdue = 0
        for name, trigger in self.triggers().items():
            if name not in self.functions:
                continue
            extra: dict[str, Any] = {}
            first, late = self.first_run(name, trigger, now, overdue)
            if first is not None:
                extra["next_run_time"] = first
            overdue += late
            self._scheduler.add_job(
                self._scheduled, trigger, args=[name], id=name, name=name, **extra
            )
        # Catch "N rows written" even when nobody calls note_writes (cheap: reads a counter).
        self._scheduler.add_job(
            self.note_writes, "interval", seconds=self.writes_check, args=[0], id="writes-check"
        )
        self.should_exit = False
        self._scheduler.start()
        self.started = True
        log.info("jobs scheduled: %s", ", ".join(self.functions))

    def first_run(
        self, name: str, trigger: Any, now: datetime, stagger: int
    ) -> tuple[datetime | None, bool]:
        """(first run time or None for the trigger's own, overdue?) from the last recorded run.

        An overdue job runs ``catch_up_delay`` s after start (overdue jobs 60 s apart); an
        interval job that is not overdue keeps its rhythm across restarts.
        """
        last = parse_time((self.state.get(state_key(name), None) or {}).get("last_run", ""))
        if last is None:
            return None, False
        nxt = trigger.get_next_fire_time(None, now)
        after = trigger.get_next_fire_time(nxt, nxt) if nxt else None
        if nxt is None or after is None:
            return None, False
        due = last + (after - nxt)
        if due <= now:
            return now + timedelta(seconds=self.catch_up_delay + 60 * stagger), True
        if hasattr(trigger, "interval") and due < nxt:
            return due.astimezone(now.tzinfo), False
        return None, False

    def shutdown(self, wait: bool = True, timeout: float = 30.0) -> bool:
        """Stop scheduling; with ``wait``, wait up to ``timeout`` s for a running job.

        Returns False when a job was still running at the timeout.
        """
        self.should_exit = True
        if self.started and self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
        self.started = False
        if not wait:
            return True
        if self._job_lock.acquire(timeout=timeout):
            self._job_lock.release()
            return True
        log.warning("job %s still running after %.0f s", self.running_job, timeout)
        return False

    # ---- running

    def _scheduled(self, name: str) -> None:
        self.execute(name, trigger="schedule")

    def run(self, name: str) -> dict[str, Any]:
        """Run ``name`` now, synchronously, and record the result (as a scheduled run does)."""
        if name not in self.functions:
            raise UserError(f"unknown job {name!r}; choose one of: {', '.join(self.functions)}")
        return self.execute(name, trigger="manual")

    def execute(self, name: str, trigger: str) -> dict[str, Any]:
        with self._job_lock:
            if self.should_exit and trigger == "schedule":
                return {"name": name, "last_status": "skipped: shutting down"}
            self.running_job = name
            at = now_iso()
            started = time.monotonic()
            try:
                result = self.functions[name](self.app.store, self.settings) or {}
                status = "ok"
            except Exception as exc:
                log.exception("job %s failed", name)
                result = {}
                status = f"error: {type(exc).__name__}: {exc}"[:500]
            finally:
                self.running_job = None
            record = self.record(name, at, status, result, time.monotonic() - started, trigger)
        if name == "optimize" and status == "ok":
            self._writes = 0
        elif name != "optimize":
            self.note_writes(0)
        return {"name": name, **record}

    def record(
        self, name: str, at: str, status: str, result: dict[str, Any], took: float, trigger: str
    ) -> dict[str, Any]:
        previous = self.state.get(state_key(name), None) or {}
        record = {
            "last_run": at,
            "last_status": status,
            "last_result": result,
            "last_ok": at if status == "ok" else previous.get("last_ok"),
            "duration_s": round(took, 3),
            "trigger": trigger,
        }
        try:
            self.state.set(state_key(name), record)
        except Exception:
            log.exception("could not record the run of job %s", name)
        log.info("job %s: %s %s (%.2f s)", name, status, result, took)
        return record

    def note_writes(self, n: int) -> None:
        """Count written rows; past ``optimize_every_writes``, bring the optimize run forward."""
        self._writes += n
        store = getattr(self.app, "store", None)
        count = max(self._writes, int(getattr(store, "writes_since_optimize", 0) or 0))
        if count < self.settings.optimize_every_writes or not self.started:
            return
        if self.running_job == "optimize":
            return  # the writes it missed are counted again after it
        job = self._scheduler.get_job("optimize")
        if job is None:
            return
        now = datetime.now(self._scheduler.timezone)
        if job.next_run_time is None or job.next_run_time > now + timedelta(seconds=1):
            self._scheduler.modify_job("optimize", next_run_time=now)

    # ---- status

    def jobs_status(self) -> list[dict[str, Any]]:
        next_runs: dict[str, str | None] = {}
        if self.started and self._scheduler is not None:
            for job in self._scheduler.get_jobs():
                next_runs[job.id] = iso(job.next_run_time)
        rows = jobs_status(self.state, tuple(self.functions), next_runs)
        for row in rows:
            row["running"] = row["name"] == self.running_job
        return rows
