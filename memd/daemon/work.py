"""The App's commands that run memd's workers: ingest, the maintenance jobs and sync, through
the daemon's live workers, else in this process (a one-shot CLI). The network is touched only
by ``sync_now``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from memd.daemon.core import AppCore
from memd.errors import UserError
from memd.project import project_of

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.daemon.ingest import Progress


class Work(AppCore):
    """Transcripts, maintenance and sync for the CLI and the socket."""

    # ---- sync across machines (memd.sync.engine)
    def sync_enable(
        self, project: str, scope: str = "me", excerpts: bool = False
    ) -> dict[str, Any]:
        from memd.sync.engine import engine_for

        return engine_for(self.settings).enable(project_of(None, project), scope, excerpts)

    def sync_disable(self, project: str) -> dict[str, Any]:
        from memd.sync.engine import engine_for

        return engine_for(self.settings).disable(project_of(None, project))

    def sync_status(self) -> dict[str, Any]:
        from memd.sync.engine import engine_for

        return {"sync": engine_for(self.settings).status()}

    def sync_now(self) -> dict[str, Any]:
        from memd.sync.engine import engine_for

        self._need_writer()
        return {"round": engine_for(self.settings).run(self.store)}

    # ---- transcripts and maintenance
    def ingest(self, paths: list[str], progress: Progress | None = None) -> dict[str, Any]:
        """`memd ingest`: read transcripts now, as finished sessions, and extract them. In the
        daemon with its live session tracker and pipeline; else with a pipeline of its own,
        reporting to ``progress`` (in-process only: the socket does not stream)."""
        from memd.daemon.ingest import run_ingest
        from memd.daemon.pipeline import Pipeline

        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise UserError("ingest needs paths: a list of file or directory paths")
        if progress is not None and not callable(progress):
            raise UserError("progress is a callback of the CLI, not a request argument")
        self._need_writer()
        if self.workers is not None:
            if self.workers.pipeline is None:
                raise UserError("this daemon runs without extraction; cannot ingest")
            report = run_ingest(self.workers.pipeline, paths, progress, self.workers.tracker)
            return {**report, "via": self.via}
        with self._state() as state:
            report = run_ingest(Pipeline(cast("App", self), state, self.settings), paths, progress)
        return {**report, "via": self.via}

    def jobs(self) -> dict[str, Any]:
        """The maintenance jobs with their next and last runs; ``scheduled`` is False when no
        scheduler runs (outside the daemon: then only the last runs are known)."""
        from memd.daemon.jobs import jobs_status

        scheduler = self.workers.scheduler if self.workers is not None else None
        if scheduler is not None:
            return {"jobs": scheduler.jobs_status(), "scheduled": True, "via": self.via}
        with self._state() as state:
            return {"jobs": jobs_status(state), "scheduled": False, "via": self.via}

    def last_cleanup_run(self) -> str:
        """The id of the cleanup job's last run that archived something (``memd jobs``)."""
        jobs: list[dict[str, Any]] = self.jobs()["jobs"]
        cleanup = next((j for j in jobs if j["name"] == "cleanup"), {})
        run = (cleanup.get("last_result") or {}).get("run")
        if not run:
            raise UserError("the cleanup job's last run archived nothing (see `memd jobs`)")
        return str(run)

    def jobs_run(self, name: str) -> dict[str, Any]:
        """Run job ``name`` now and record it: in the daemon's scheduler, else in this process
        (under the writer lock), recorded the same way."""
        self._need_writer()
        if self.workers is not None:
            if self.workers.scheduler is None:
                raise UserError("the scheduler is not running")
            return self.workers.scheduler.run(name)
        from memd.daemon.jobs import Scheduler

        with self._state() as state:
            return Scheduler(cast("App", self), state, self.settings).run(name)
