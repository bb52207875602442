"""Forgetting and restoring by hand: archive memories (with their readable trace), purge them for
good, and bring archived ones back, one or many at a time.

``forget`` archives: the memory leaves the active set (hooks, search, briefs), is appended to the
readable archive, and ``restore`` brings it back. ``purge`` deletes for good. Bulk restore picks
archived memories by project, by session (a source line from it) or by cleanup run (the ``at``
stamp the cleanup job writes into each archived memory's history event). Each operation checks
every id first and writes once: a bad id changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from memd.errors import UserError
from memd.models import Memory, now_iso
from memd.store import archive
from memd.store.filters import contains, is_in, match
from memd.store.table import MemoryStore

MAX_IDS = 10_000
"""At most this many ids in one request."""


def wanted_ids(id: str | None = None, ids: Iterable[str] | None = None) -> list[str]:
    """The ids of a request (``id`` or ``ids``, not both), checked: strings, not empty."""
    if id is not None and ids is not None:
        raise UserError("give either id or ids, not both")
    raw = [id] if id is not None else ids
    if raw is None or isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise UserError("give the id of a memory (id) or a list of ids (ids)")
    if not raw:
        raise UserError("no memory ids given")
    if len(raw) > MAX_IDS:
        raise UserError(f"too many ids ({len(raw)}); at most {MAX_IDS} at a time")
    if not all(isinstance(i, str) and i.strip() for i in raw):
        raise UserError("every id must be a non-empty string")
    return list(dict.fromkeys(i.strip() for i in raw))


def resolve(store: MemoryStore, refs: list[str]) -> list[Memory]:
    """The memories of ``refs`` (full ids or unique prefixes), in order, each once. Any unknown
    or ambiguous ref raises (NotFound) before anything is changed."""
    full = [r for r in refs if len(r) == 16]
    found = {m.id: m for m in store.query(is_in("id", full), limit=len(full))} if full else {}
    out: dict[str, Memory] = {}
    for ref in refs:
        memory = found.get(ref) or store.get(ref)
        out.setdefault(memory.id, memory)
    return list(out.values())


def archive_memories(
    store: MemoryStore, home: Any, refs: list[str], reason: str
) -> tuple[list[Memory], list[Memory]]:
    """Archive the memories of ``refs`` (appended to the readable archive first), as one write.
    Returns (archived now, already archived)."""
    with store.write_lock:
        memories = resolve(store, refs)
        todo = [m for m in memories if m.status != "archived"]
        already = [m for m in memories if m.status == "archived"]
        if not todo:
            return [], already
        now = datetime.now(UTC)
        at = now_iso()
        archive.append(home, [archive.ArchiveEntry(m, reason) for m in todo], now, at)
        for m in todo:
            m.status = "archived"
            m.updated_at = at
            m.history.append({"at": at, "by": "hand", "archived": reason})
        rows = store.rows_with_vectors(m.id for m in todo)
        store.write(todo, {m.id: rows[m.id]["vector"] for m in todo if m.id in rows})
        return todo, already


def purge_memories(store: MemoryStore, refs: list[str]) -> list[Memory]:
    """Delete the memories of ``refs`` for good (the journal records the deletion)."""
    with store.write_lock:
        memories = resolve(store, refs)
        store.delete([m.id for m in memories])
        return memories


def restore_memories(
    store: MemoryStore, memories: list[Memory], why: str, by: str = "hand"
) -> tuple[list[Memory], list[Memory]]:
    """Make ``memories`` active again (archived or superseded), as one write; the history says
    why and ``by`` whom. Returns (restored, already active)."""
    todo = [m for m in memories if m.status != "active"]
    already = [m for m in memories if m.status == "active"]
    at = now_iso()
    updates = {}
    for m in todo:
        event = {"at": at, "by": by, "restored": m.status, "why": why}
        m.history.append(event)
        m.status, m.superseded_by, m.updated_at = "active", "", at
        updates[m.id] = {
            "status": "active",
            "superseded_by": "",
            "updated_at": at,
            "history": m.history,
        }
    store.update_fields(updates)
    return todo, already


def restore_refs(store: MemoryStore, refs: list[str]) -> tuple[list[Memory], list[Memory]]:
    """Restore the memories of ``refs`` (checked first: a bad ref changes nothing)."""
    with store.write_lock:
        return restore_memories(store, resolve(store, refs), "restored by id")


def archived_by(
    store: MemoryStore,
    project: str | None = None,
    session: str | None = None,
    run: str | None = None,
) -> list[Memory]:
    """Archived memories of ``project``, with a source line from ``session``, or archived by the
    cleanup run ``run`` (that run is the latest archiving in their history). At least one."""
    if not (project or session or run):
        raise UserError("name a project, a session or a cleanup run")
    if not all(isinstance(v, str) for v in (project, session, run) if v is not None):
        raise UserError("project, session and run are strings")
    where = match(status="archived")
    if project:
        where = where & match(project=project)
    if run:
        where = where & contains("history", run)
    found = store.query(where)
    if session:
        found = [m for m in found if any(s.session_id == session for s in m.sources)]
    if run:
        found = [m for m in found if archived_in_run(m) == run]
    return found


def archived_in_run(memory: Memory) -> str | None:
    """The cleanup run (its ``at``) that archived ``memory`` last, or None when its latest
    archiving was not the cleanup job's (by hand, or it was restored since)."""
    for event in reversed(memory.history):
        if event.get("restored"):
            return None
        if event.get("by") == "cleanup":
            return str(event.get("at") or "") or None
        if event.get("archived"):
            return None
    return None


def restore_archived(
    store: MemoryStore,
    project: str | None = None,
    session: str | None = None,
    run: str | None = None,
) -> list[Memory]:
    """Restore every archived memory :func:`archived_by` picks, as one write."""
    with store.write_lock:
        found = archived_by(store, project, session, run)
        if not found:
            raise UserError(f"no archived memory matches {describe(project, session, run)}")
        why = f"bulk restore of {describe(project, session, run)}"
        return restore_memories(store, found, why)[0]


def describe(project: str | None, session: str | None, run: str | None) -> str:
    parts = []
    if project:
        parts.append(f"project {project}")
    if session:
        parts.append(f"session {session}")
    if run:
        parts.append(f"cleanup run {run}")
    return " and ".join(parts)


def brief(memory: Memory) -> dict[str, Any]:
    """What a bulk reply says of each memory."""
    return {
        "id": memory.id,
        "kind": memory.kind,
        "project": memory.project,
        "status": memory.status,
        "text": memory.text[:300],
    }


def forget(
    store: MemoryStore,
    home: Any,
    id: str | None,
    ids: list[str] | None,
    purge: bool,
    reason: str,
) -> dict[str, Any]:
    """The socket's ``forget``: archive (or ``purge``) memory ``id`` or every one of ``ids``."""
    refs = wanted_ids(id, ids)
    already: list[Memory] = []
    if purge:
        gone = purge_memories(store, refs)
    else:
        gone, already = archive_memories(store, home, refs, reason)
        if id is not None and already:
            raise UserError(
                f"memory {already[0].id} is already archived (`memd restore "
                f"{already[0].id}` brings it back; `memd forget --purge` deletes it)"
            )
    if id is not None:  # the reply existing clients read: the id and its text
        out: dict[str, Any] = {"forgotten": gone[0].id, "text": gone[0].text, "purged": purge}
        if not purge:
            out["memory"] = gone[0].to_dict()
        return out
    return {
        "forgotten": [m.id for m in gone],
        "memories": [brief(m) for m in gone],
        "already": [m.id for m in already],
        "purged": purge,
    }


def restore(
    store: MemoryStore,
    id: str | None,
    ids: list[str] | None,
    project: str | None,
    session: str | None,
    run: str | None,
) -> dict[str, Any]:
    """The socket's ``restore``: memory ``id`` or ``ids``, or the archived memories of a
    project, a session or a cleanup run."""
    if id is not None or ids is not None:
        if project or session or run:
            raise UserError("restore either ids or a project, session or run, not both")
        done, already = restore_refs(store, wanted_ids(id, ids))
        if id is not None:
            if already:
                raise UserError(f"memory {already[0].id} is already active")
            return {"memory": store.get(done[0].id).to_dict()}
    else:
        done, already = restore_archived(store, project, session, run), []
    return {
        "restored": [m.id for m in done],
        "memories": [brief(m) for m in done],
        "already": [m.id for m in already],
    }
