"""What memd can do, as one object: the daemon's handlers and the CLI's local mode both call it.

Every public method takes JSON-able arguments and returns a JSON-able dict, so the same call
works in-process and over the socket (``{"cmd": "search", ...}`` runs ``App.search``).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from pathlib import Path
from typing import Any

from memd import retrieve
from memd.errors import NotFound, StoreError, UserError
from memd.lock import WriterLock
from memd.merge import upsert
from memd.models import USER_SCOPE, Memory, check_kind, now_iso
from memd.project import resolve_project
from memd.settings import Settings
from memd.store import MemoryStore, sql_in, sql_str

log = logging.getLogger(__name__)


def project_of(cwd: str | None = None, project: str | None = None) -> str:
    """The project for a request: an explicit project dir, else the cwd, resolved to its git root."""
    return resolve_project(project or cwd or str(Path.cwd()))


class App:
    def __init__(self, settings: Settings, store: MemoryStore | None = None) -> None:
        self.settings = settings
        self.store = store or MemoryStore(settings)
        self.lock = WriterLock(settings.home)
        self.writer = False
        self.resident = False
        """True in the daemon. A one-shot command may drop the embedding model once it has no
        more texts to embed (a bulk import before its final optimize: ~160 MB less peak)."""
        self.vector_cache: retrieve.VectorIndex | None = None
        """The daemon's in-memory vectors (``memd.inject.VectorCache``) for searches; a
        one-shot CLI leaves it None, as building it would cost more than one query."""

    def open(self, *, writer: bool, owner: str = "cli", check_model: bool = True) -> App:
        if writer:
            self.lock.acquire(owner)
            self.writer = True
        try:
            if writer:  # under the writer lock: at daemon start, or a one-shot writer
                from memd.migrations import migrate

                migrate(self.settings)
            self.store.open(check_model=check_model)
        except BaseException:
            self.lock.release()
            raise
        return self

    def close(self) -> None:
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
    ) -> dict[str, Any]:
        if not query or not query.strip():
            raise UserError("the search query is empty")
        statuses = ("active", "superseded", "archived") if include_all else ("active",)
        results = retrieve.search(
            self.store,
            query,
            [project_of(cwd, project)],
            limit=limit or self.settings.search_limit,
            kinds=kinds,
            statuses=statuses,
            cache=self.vector_cache,
        )
        return {"results": results}

    def list(
        self,
        cwd: str | None = None,
        project: str | None = None,
        kind: str | None = None,
        include_all: bool = False,
        all_projects: bool = False,
        limit: int = 1000,
    ) -> dict[str, Any]:
        parts = []
        if not all_projects:
            parts.append(sql_in("project", [project_of(cwd, project), USER_SCOPE]))
        if kind:
            parts.append(f"kind = {sql_str(check_kind(kind))}")
        if not include_all:
            parts.append("status = 'active'")
        memories = self.store.query(" AND ".join(parts) or None)
        memories.sort(key=lambda m: (not m.pinned, m.kind, m.created_at))
        return {"memories": [m.to_dict() for m in memories[:limit]], "total": len(memories)}

    def show(self, id: str) -> dict[str, Any]:
        memory = self.store.get(id)
        out = memory.to_dict()
        if memory.superseded_by:
            with contextlib.suppress(NotFound):
                out["superseded_by_text"] = self.store.get(memory.superseded_by).text
        replaced = self.store.query(f"superseded_by = {sql_str(memory.id)}")
        out["supersedes"] = [{"id": m.id, "text": m.text} for m in replaced]
        return {"memory": out}

    def stats(self) -> dict[str, Any]:
        return {"memories": self.store.stats(), "table": self.store.table_stats()}

    # ---- writes
    def add(
        self,
        text: str,
        cwd: str | None = None,
        project: str | None = None,
        kind: str = "fact",
        pin: bool = False,
        topic: str = "",
        keywords: builtins.list[str] | None = None,
        importance: float = 0.7,
    ) -> dict[str, Any]:
        from memd.redact import redact

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

    def forget(self, id: str) -> dict[str, Any]:
        self._need_writer()
        memory = self.store.get(id)
        self.store.delete([memory.id])
        return {"forgotten": memory.id, "text": memory.text}

    def pin(self, id: str, pinned: bool = True) -> dict[str, Any]:
        self._need_writer()
        memory = self.store.get(id)
        self.store.update_fields({memory.id: {"pinned": pinned, "updated_at": now_iso()}})
        return {"memory": self.store.get(memory.id).to_dict()}

    def restore(self, id: str) -> dict[str, Any]:
        self._need_writer()
        with self.store.write_lock:  # the status checked is the status changed
            memory = self.store.get(id)
            if memory.status == "active":
                raise UserError(f"memory {memory.id} is already active")
            fields: dict[str, Any] = {
                "status": "active",
                "superseded_by": "",
                "updated_at": now_iso(),
            }
            self.store.update_fields({memory.id: fields})
        return {"memory": self.store.get(memory.id).to_dict()}

    def import_memories(self, path: str, cwd: str | None = None) -> dict[str, Any]:
        from memd import export

        self._need_writer()
        target = Path(path).expanduser()
        if target.is_dir():
            return export.import_dir(self, target)
        return export.import_jsonl(self, target, default_project=project_of(cwd))

    def export(self, path: str) -> dict[str, Any]:
        from memd import export

        return export.export_dir(self.store, Path(path).expanduser())

    def reindex(self) -> dict[str, Any]:
        self._need_writer()
        count = self.store.reindex()
        return {"reindexed": count, "model": self.store.embedder.model_id}
