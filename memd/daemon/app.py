"""What memd can do, as one object: the daemon's handlers and the CLI's local mode both call it.

Every public method takes JSON-able arguments (``ingest`` also an in-process ``progress``
callback) and returns a JSON-able dict, so the same call works in-process and over the socket
(``{"cmd": "search", ...}`` runs ``App.search``; :data:`memd.daemon.commands.APP_COMMANDS` maps the
socket names to the methods).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.errors import NotFound, StoreError, UserError
from memd.models import USER_SCOPE, Memory, now_iso
from memd.project import resolve_project
from memd.recall import gloss, nearest, retrieve
from memd.recall.hits import hit_json
from memd.recall.vectors import QueryBatcher, VectorCache
from memd.settings import Settings
from memd.store import rebuild
from memd.store.filters import match
from memd.store.keyindex import KeyIndex
from memd.store.lock import WriterLock
from memd.store.table import MemoryStore
from memd.store.upsert import upsert

if TYPE_CHECKING:
    from memd.daemon.ingest import Progress
    from memd.daemon.jobs import Scheduler
    from memd.daemon.pipeline import Pipeline
    from memd.ingest.session import SessionTracker
    from memd.ingest.tailer import Tailer
    from memd.state import State
    from memd.store.upsert import Near

log = logging.getLogger(__name__)


@dataclass
class Workers:
    """The daemon's live components (each None when it failed to start). ``App`` uses them for
    ``ingest`` and ``jobs`` inside the daemon; a one-shot CLI has none and makes its own."""

    state: State | None = None
    tracker: SessionTracker | None = None
    pipeline: Pipeline | None = None
    tailer: Tailer | None = None
    scheduler: Scheduler | None = None


def project_of(cwd: str | None = None, project: str | None = None) -> str:
    """The project for a request: an explicit project dir, else the cwd, resolved to its git root."""
    return resolve_project(project or cwd or str(Path.cwd()))


class App:
    def __init__(
        self, settings: Settings, store: MemoryStore | None = None, *, resident: bool = False
    ) -> None:
        gloss.install()  # an English-only model embeds Chinese text as its English gloss
        self.settings = settings
        self.resident = resident
        """True in the daemon: the model stays loaded, and the store keeps every memory's list
        keys and counts in memory (:mod:`memd.store.keyindex`) and finds an insert's neighbours
        in the recall's vector cache (:mod:`memd.recall.nearest`). A one-shot command reads the
        table instead, and may drop the model once it has no more texts to embed (a bulk
        import before its final optimize: ~64 MiB less peak)."""
        self._recall: tuple[VectorCache, QueryBatcher] | None = None
        """The in-memory vectors and the query embedder every recall shares (the daemon's;
        a one-shot CLI builds them only when it recalls, as building costs more than one query)."""
        near = self._cache_neighbours if resident else None
        self.store = store or MemoryStore(settings, keep_keys=resident, near=near)
        self.lock = WriterLock(settings.home)
        self.writer = False
        self.workers: Workers | None = None
        """Set by the daemon (:class:`Workers`); None in a one-shot CLI."""

    def recall_cache(self) -> tuple[VectorCache, QueryBatcher]:
        """The vector cache and the query batcher, made on first use."""
        if self._recall is None:
            self._recall = (
                VectorCache(self.store),
                QueryBatcher(self.store.embedder.embed_queries),
            )
        return self._recall

    def _cache_neighbours(self, store: MemoryStore) -> Near:
        """The resident store's neighbour search: the recall's vector cache for ``store``."""
        cache = VectorCache(store)
        self._recall = (cache, QueryBatcher(store.embedder.embed_queries))
        return functools.partial(nearest.nearest_ids, cache)

    @property
    def keys(self) -> KeyIndex:
        """The resident store's key index (:mod:`memd.store.keyindex`)."""
        if self.store.keys is None:
            raise UserError("the key index is the daemon's: this App is not resident")
        return self.store.keys

    def open(self, *, writer: bool, owner: str = "cli", check_model: bool = True) -> App:
        if writer:
            self.lock.acquire(owner)
            self.writer = True
        try:
            if writer:  # under the writer lock: at daemon start, or a one-shot writer
                from memd.store.migrations import migrate

                migrate(self.settings)
            # The daemon migrates a store written with another model (e.g. the previous
            # default) instead of refusing to start; other processes only check.
            remodel = writer and owner == "daemon"
            self.store.open(check_model=check_model and not remodel)
            if remodel:
                rebuild.migrate_model(self.store)
        except BaseException:
            self.lock.release()
            raise
        return self

    def close(self) -> None:
        if self._recall is not None:
            self._recall[1].close()
        self.store.close()
        self.lock.release()

    def _need_writer(self) -> None:
        if not self.writer:
            raise StoreError("this process does not hold the writer lock")

    # ---- reads
    def search(
        self,
        query: str,
        cwd: str | None = None,
        project: str | None = None,
        limit: int | None = None,
        kinds: list[str] | None = None,
        include_all: bool = False,
        all_projects: bool = False,
        explain: bool = False,
    ) -> dict[str, Any]:
        """The relevant memories of the project (and user-wide ones), or of ``all_projects``;
        an empty answer says where else there are matches (and, with ``explain``, the nearest
        candidates that missed): :mod:`memd.daemon.scoped`."""
        from memd.daemon import scoped

        return scoped.search(
            self,
            query,
            project_of(cwd, project),
            limit=limit or self.settings.search_limit,
            kinds=kinds,
            include_all=include_all,
            all_projects=all_projects,
            explain=explain,
        )

    def find(
        self,
        query: str,
        project: str | None = None,
        kind: str | None = None,
        status: str | None = "active",
        pinned: bool | None = None,
        limit: int = 50,
        kinds: list[str] | None = None,
    ) -> dict[str, Any]:
        """`search` over one project or all of them (``project`` None), with the list's filters
        (``kinds``: any of several); the results carry the same ``score_breakdown`` as `memd
        search --explain`."""
        from memd.models import STATUSES
        from memd.store import curate

        if not query or not query.strip():
            raise UserError("the search query is empty")
        if status is not None and status not in STATUSES:
            raise UserError(f"unknown status {status!r}; choose one of: {', '.join(STATUSES)}")
        projects = [project_of(None, project)] if project else curate.projects_of(self.store)
        results = retrieve.search(
            self.store,
            query,
            projects or [USER_SCOPE],
            limit=limit if pinned is None else max(limit * 4, 100),
            kinds=[kind] if kind else kinds or None,
            statuses=(status,) if status else STATUSES,
            cache=None,  # the hooks' cache: rebuilding it for every project costs more here
        )
        if pinned is not None:
            results = [r for r in results if r.pinned == pinned][:limit]
        return {"results": [hit_json(r) for r in results]}

    def list_memories(
        self,
        cwd: str | None = None,
        project: str | None = None,
        kind: str | None = None,
        include_all: bool = False,
        all_projects: bool = False,
        limit: int = 1000,
        offset: int = 0,
        status: str | None = None,
        pinned: bool | None = None,
        order: str = "kind",
        kinds: list[str] | None = None,
    ) -> dict[str, Any]:
        """One page of memories; ``status`` (else active, or every status with ``include_all``),
        ``pinned``, ``kind`` (or ``kinds``, any of several) and ``order`` (kind, recent, hits)
        narrow and sort it."""
        from memd.store import curate

        if status is None and not include_all:
            status = "active"
        projects = None if all_projects else [project_of(cwd, project), USER_SCOPE]
        which = kind or (tuple(kinds) if isinstance(kinds, list) else None)
        memories, total = curate.list_page(
            self.store, projects, which, status, pinned, offset, limit, order
        )
        out = {"memories": [m.to_dict() for m in memories], "total": total}
        if not total and projects is not None:
            from memd.daemon.scoped import elsewhere_count

            out["elsewhere"] = elsewhere_count(self, which, status, pinned)
        return out

    def show(self, id: str, excerpts: bool = False, turns: bool = False) -> dict[str, Any]:
        """One memory with what it replaced; ``excerpts``: the excerpts citing its lines;
        ``turns``: what was said in its source turns (:mod:`memd.daemon.sourceturns`)."""
        memory = self.store.get(id)
        out = memory.to_dict()
        if memory.superseded_by:
            with contextlib.suppress(NotFound):
                out["superseded_by_text"] = self.store.get(memory.superseded_by).text
        replaced = self.store.query(match(superseded_by=memory.id))
        out["supersedes"] = [{"id": m.id, "text": m.text} for m in replaced]
        if excerpts:
            from memd.store import curate

            out["excerpts"] = curate.excerpts_for(self.store, memory)
        if turns:
            from memd.daemon.sourceturns import source_turns

            read: list[str] = []
            with contextlib.suppress(UserError), self._state() as state:
                read = list(state.offsets())  # the files read (else the transcripts dir only)
            said = source_turns(
                out["sources"], read, self.settings.transcripts_dir, self.settings.redact_patterns
            )
            out["turns"], out["turns_missing"] = said["turns"], said["missing"]
        return {"memory": out}

    def stats(self, fresh: bool = True) -> dict[str, Any]:
        """`memd stats`: counts by project, kind and status, weekly growth, hits, disk use.

        ``fresh=False`` (the UI) may answer with the figures of a moment ago while they are
        recomputed (``stats.computed_at`` says when)."""
        from memd.store import stats

        full = stats.cached(
            self.store,
            "stats",
            lambda: stats.collect(self.store, self.settings.home),
            stale_ok=not fresh,
        )
        keys = ("total", "by_project", "by_kind", "by_status", "active")
        return {
            "memories": {k: full[k] for k in keys},  # what store.stats() gives, in one scan
            "table": self.store.table_stats(),
            "stats": full,
        }

    def sessions(
        self, project: str | None = None, offset: int = 0, limit: int = 20, fresh: bool = True
    ) -> dict[str, Any]:
        """Sessions newest first, with what was learned from each (the UI's timeline)."""
        from memd.store import stats

        scope = project_of(None, project) if project else None
        return stats.sessions(self.store, scope, offset, limit, stale_ok=not fresh)

    def projects(self, fresh: bool = True) -> dict[str, Any]:
        from memd.store import curate

        return {"projects": curate.projects_of(self.store, stale_ok=not fresh)}

    # ---- writes
    def add(
        self,
        text: str,
        cwd: str | None = None,
        project: str | None = None,
        kind: str = "fact",
        pin: bool = False,
        topic: str = "",
        keywords: list[str] | None = None,
        importance: float = 0.7,
    ) -> dict[str, Any]:
        from memd.extract.redact import redact

        self._need_writer()
        clean = redact(text or "", self.settings.redact_patterns).strip()
        memory = Memory(
            text=clean,
            kind=kind,
            project=project_of(cwd, project),
            topic=topic,
            keywords=keywords or [],
            importance=importance,
            pinned=pin,
        )
        result = upsert(self.store, [memory])[0]
        return {"memory": self.store.get(result.target).to_dict(), "result": result.to_dict()}

    def forget(
        self,
        id: str | None = None,
        ids: list[str] | None = None,
        purge: bool = False,
        reason: str = "forgotten by hand",
    ) -> dict[str, Any]:
        """Archive memory ``id`` (or every one of ``ids``): out of every brief and search,
        into the readable archive; ``restore`` brings it back. ``purge`` deletes for good."""
        from memd.store import forgetting

        self._need_writer()
        return forgetting.forget(self.store, self.settings.home, id, ids, purge, reason)

    def pin(
        self, id: str | None = None, pinned: bool = True, ids: list[str] | None = None
    ) -> dict[str, Any]:
        """Pin (or unpin) memory ``id``, or every one of ``ids`` in one write."""
        from memd.store import forgetting

        self._need_writer()
        memories = forgetting.resolve(self.store, forgetting.wanted_ids(id, ids))
        at = now_iso()
        self.store.update_fields(
            {m.id: {"pinned": bool(pinned), "updated_at": at} for m in memories}
        )
        if id is not None:
            return {"memory": self.store.get(memories[0].id).to_dict()}
        return {"pinned": bool(pinned), "ids": [m.id for m in memories]}

    def edit(
        self,
        id: str,
        text: str | None = None,
        kind: str | None = None,
        importance: float | None = None,
    ) -> dict[str, Any]:
        """Change text (re-embedded), kind or importance; the old values stay in the history."""
        from memd.store import curate

        self._need_writer()
        memory = curate.edit(
            self.store,
            id,
            text=text,
            kind=kind,
            importance=importance,
            redact_patterns=self.settings.redact_patterns,
        )
        return {"memory": memory.to_dict()}

    def archive(self, id: str, reason: str = "archived by hand") -> dict[str, Any]:
        """`forget` of one memory with a reason of the caller's (the viewer's first form)."""
        reply = self.forget(id=id, reason=reason)
        return {"memory": reply["memory"]}

    def restore(
        self,
        id: str | None = None,
        ids: list[str] | None = None,
        project: str | None = None,
        session: str | None = None,
        run: str | None = None,
    ) -> dict[str, Any]:
        """Make memory ``id`` (or ``ids``) active again, archived or superseded; or, in bulk,
        every archived memory of ``project``, of ``session`` or of cleanup run ``run`` (the
        ``at`` of its history event; ``last``: the latest run)."""
        from memd.store import forgetting

        self._need_writer()
        if run == "last":
            run = self.last_cleanup_run()
        scope = project_of(None, project) if project else None
        return forgetting.restore(self.store, id, ids, scope, session, run)

    def import_memories(self, path: str, cwd: str | None = None) -> dict[str, Any]:
        """`memd import`: an export directory or a JSONL file, recognised first
        (:mod:`memd.store.importing`); anything else is refused and nothing is imported."""
        from memd.store import importing

        self._need_writer()
        return importing.import_path(
            self.store,
            Path(path).expanduser(),
            project_of(cwd),
            self.settings.redact_patterns,
            resident=self.resident,
        )

    def export(self, path: str) -> dict[str, Any]:
        from memd.store import export

        return export.export_dir(self.store, Path(path).expanduser())

    def reindex(self) -> dict[str, Any]:
        self._need_writer()
        count = rebuild.reindex(self.store)
        return {"reindexed": count, "model": self.store.embedder.model_id}

    # ---- sync across machines (memd.sync.engine); the network is touched only by sync_now
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

    # ---- transcripts and maintenance: the daemon's live workers, else this process's own
    @property
    def via(self) -> str:
        """Where a command runs: ``daemon`` or ``local`` (a one-shot CLI)."""
        return "daemon" if self.workers is not None else "local"

    @contextlib.contextmanager
    def _state(self) -> Iterator[State]:
        """The daemon's state, or memd's state opened for this one call (a one-shot CLI)."""
        if self.workers is not None:
            if self.workers.state is None:
                raise UserError("this daemon runs without its state; see `memd status`")
            yield self.workers.state
            return
        from memd.state import State

        state = State.open_default(self.settings.home)
        try:
            yield state
        finally:
            state.close()

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
            report = run_ingest(Pipeline(self, state, self.settings), paths, progress)
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
            return Scheduler(self, state, self.settings).run(name)
