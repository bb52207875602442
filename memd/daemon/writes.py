"""The App's write commands: add, forget (archive or purge), pin, edit, archive, restore,
import, export and reindex. Each needs the writer lock (the daemon's, or a one-shot CLI's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memd.daemon.core import AppCore
from memd.models import Memory, now_iso
from memd.project import project_of
from memd.store import rebuild
from memd.store.upsert import upsert


class Writes(AppCore):
    """Changing the store by hand: the CLI, the socket, MCP and the viewer."""

    last_cleanup_run: Callable[[], str]
    """The cleanup job's last run (:class:`memd.daemon.work.Work`), for ``restore --run last``."""

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
