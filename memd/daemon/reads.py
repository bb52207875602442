"""The App's read commands: search, find, the memory list, one memory shown, stats, sessions
and projects. None of them needs the writer lock."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, cast

from memd.daemon.core import AppCore

if TYPE_CHECKING:
    from memd.daemon.app import App
from memd.errors import NotFound, UserError
from memd.models import USER_SCOPE
from memd.project import project_of
from memd.recall import retrieve
from memd.recall.hits import hit_json
from memd.store.filters import match


class Reads(AppCore):
    """Reading the store for the CLI, the socket, MCP and the viewer."""

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
            cast("App", self),
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

            out["elsewhere"] = elsewhere_count(cast("App", self), which, status, pinned)
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
