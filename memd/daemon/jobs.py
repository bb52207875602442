"""The scheduler of the maintenance jobs (:mod:`memd.store.maintenance`) in the daemon, with catch-up.

:class:`Scheduler` runs them with APScheduler 3.x (``coalesce=True``, ``max_instances=1``, no job
store; last runs live in memd's state, under ``jobs.<name>``); :func:`jobs_status` reads those
records for ``memd jobs``.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memd.errors import UserError
from memd.models import JOB_NAMES, now_iso
from memd.store.forgetting import archived_in_run
from memd.store.maintenance import JOBS, JobFunction
from memd.timestamps import parse_time

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.settings import Settings
    from memd.state import State

log = logging.getLogger(__name__)

MISFIRE_GRACE_SECONDS = 120
CATCH_UP_DELAY_SECONDS = 60.0
"""After a restart, a job whose last run is overdue runs this long after start."""
WRITES_CHECK_SECONDS = 30.0


def iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def state_key(name: str) -> str:
    return f"jobs.{name}"


def jobs_status(
    state: State, names: tuple[str, ...] = JOB_NAMES, next_runs: dict[str, str | None] | None = None
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
    - Last runs and results live in ``state`` (memd's :class:`memd.state.State`) under
      ``jobs.<name>``.
    - After a restart, a job whose last run is overdue runs ``catch_up_delay`` seconds after start;
      an interval job that is not overdue keeps its rhythm (next run = last run + interval).
    - ``functions`` and ``triggers`` replace the default job functions or triggers (tests, tuning).
    """

    def __init__(
        self,
        app: App,
        state: State,
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
            from memd.sync.engine import sync_job

            self.functions["sync"] = sync_job  # pushes and pulls; backs off after failures
        self._trigger_overrides = dict(triggers or {})
        self.catch_up_delay = catch_up_delay
        self.writes_check = writes_check
        self._scheduler: Any = None
        self._job_lock = threading.Lock()
        self.running_job: str | None = None
        self.started = False
        self.stop_requested = False
        """Set by ``shutdown``: scheduled runs still queued are skipped."""
        self._writes = 0
        self.runs = 0
        """Jobs run so far (the daemon gives library pages back after heavy work)."""

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
        self.stop_requested = False
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
        self.stop_requested = True
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
            if self.stop_requested and trigger == "schedule":
                return {"name": name, "last_status": "skipped: shutting down"}
            self.running_job = name
            at = now_iso()
            started = time.monotonic()
            try:
                result = self.functions[name](self.app.store, self.settings) or {}
                if name == "cleanup":
                    result = with_run_id(self.app.store, result)
                status = "ok"
            except Exception as exc:
                log.exception("job %s failed", name)
                result = {}
                status = f"error: {type(exc).__name__}: {exc}"[:500]
            finally:
                self.running_job = None
                self.runs += 1
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


def with_run_id(store: Any, result: dict[str, Any]) -> dict[str, Any]:
    """A cleanup result with ``run``: the ``at`` stamp the run wrote into the history of every
    memory it archived, which `memd restore --run` takes (read back from the first of them)."""
    if result.get("run") or not result.get("ids"):
        return result
    try:
        run = archived_in_run(store.get(str(result["ids"][0])))
    except Exception:  # the result stands without it
        log.exception("could not read the id of the cleanup run")
        return result
    return {**result, "run": run} if run else result
