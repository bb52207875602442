"""Closing TODOs that a later memory says are done: when that memory is stored, and in the
cleanup job (for what was stored before, or by another path).

Conservative on purpose: a TODO is closed only when a later memory has a sentence that states
completion, carries no negation, shares most of the TODO's keywords, and the memory is
semantically close to the TODO (cosine >= 0.6).
"""

from __future__ import annotations

import logging
import math
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memd import kinds
from memd.models import Memory, now_iso
from memd.store import archive
from memd.store.filters import clause, match
from memd.store.table import MemoryStore
from memd.text import stopwords
from memd.text.chinese import RANGES

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

TODO_DONE_MIN_COSINE = 0.6

DONE_WORDS = re.compile(
    r"\b(?:done|fixed|completed?|finished|implemented|resolved|shipped|merged|released"
    r"|committed)\b"
    r"|已完成|完成了|搞定|修好了|已修复|做完了",
    re.I,
)
NOT_DONE = re.compile(
    r"\b(?:not|never|yet|still|todo|pending|almost|partially|half|remaining|next)\b|n't"
    r"|未完成|没有?完成|还没|尚未|没搞定|没修好|待办",
    re.I,
)
_TODO_REF = re.compile(r"\b(?:that|the|this|our|my|your)\s+(?:todo|to-do)s?\b", re.I)
"""A TODO pointed at ("so that TODO is done"): not a sign the work is still to do."""
_WORD = re.compile(rf"[a-z0-9_]+|[{RANGES}]", re.I)
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
GENERIC = stopwords.TODO_MATCH
CLOSING_KINDS = kinds.names("closes_todos")
"""Kinds whose text may say a TODO is done (any kind but another TODO)."""


def content_tokens(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - GENERIC


def done_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that state completion without negation."""
    if not DONE_WORDS.search(text):
        return []
    return [
        s
        for s in _SENTENCES.split(text)
        if s and DONE_WORDS.search(s) and not NOT_DONE.search(_TODO_REF.sub(" ", s))
    ]


def states_done(todo: Memory, later: Memory) -> bool:
    """A sentence of ``later`` says ``todo`` is done: a completion word, no negation, most of
    the TODO's keywords shared."""
    wanted = content_tokens(todo.text)
    need = max(2, math.ceil(0.5 * len(wanted)))
    return any(len(wanted & content_tokens(s)) >= need for s in done_sentences(later.text))


_TODO_PREFIX = re.compile(r"^\s*(?:TODO|FIXME)\s*[:：-]?\s*", re.IGNORECASE)
LISTED_DONE = "Completed: "
"""How a todo list's finished items are stored (one progress memory, items split by "; ")."""


def item_key(text: str) -> str:
    return re.sub(r"\W+", " ", _TODO_PREFIX.sub("", text).lower()).strip()


def listed_done(text: str) -> set[str]:
    """The items of a "Completed: a; b" memory (a todo list's finished items), as keys."""
    if not text.startswith(LISTED_DONE):
        return set()
    body = re.sub(r"\s*\(\+\d+ more\)$", "", text[len(LISTED_DONE) :])
    return {item_key(item) for item in body.split("; ") if item.strip()}


def _match(
    store: MemoryStore, todos: list[Memory], later: list[Memory]
) -> list[tuple[Memory, Memory]]:
    """(todo, evidence) pairs: the same item marked completed in a later todo list, or
    evidence created after the TODO, close in meaning (one matrix product over the stored
    vectors), and stating it done."""
    found: list[tuple[Memory, Memory]] = []
    lists = [(m, listed_done(m.text)) for m in later if m.text.startswith(LISTED_DONE)]
    for todo in todos:
        key = item_key(todo.text)
        hit = next(
            (m for m, items in lists if key in items and m.created_at >= todo.created_at), None
        )
        if hit is not None:
            found.append((todo, hit))
    closed = {t.id for t, _ in found}
    todos = [t for t in todos if t.id not in closed]
    return found + _match_words(store, todos, later)


def _match_words(
    store: MemoryStore, todos: list[Memory], later: list[Memory]
) -> list[tuple[Memory, Memory]]:
    later = [m for m in later if done_sentences(m.text)]
    if not todos or not later:
        return []
    rows = store.rows_with_vectors([*(t.id for t in todos), *(m.id for m in later)])
    todos = [t for t in todos if t.id in rows]
    later = [m for m in later if m.id in rows]
    if not todos or not later:
        return []
    sims = (
        np.asarray([rows[t.id]["vector"] for t in todos], dtype=np.float32)
        @ np.asarray([rows[m.id]["vector"] for m in later], dtype=np.float32).T
    )
    found = []
    for i, todo in enumerate(todos):
        for j in np.argsort(-sims[i]):
            evidence = later[int(j)]
            if sims[i, j] < TODO_DONE_MIN_COSINE:
                break
            if evidence.created_at > todo.created_at and states_done(todo, evidence):
                found.append((todo, evidence))
                break
    return found


def active_todos(store: MemoryStore, project: str) -> list[Memory]:
    return store.query(match(project=project, status="active", kind="todo", pinned=False))


def done_todos(store: MemoryStore, project: str) -> list[tuple[Memory, Memory]]:
    """(todo, evidence) for active unpinned TODOs that a later memory or excerpt says are done.

    One scan of the project, then one matrix product (the cleanup job's sweep).
    """
    todos = active_todos(store, project)
    if not todos:
        return []
    since = min(t.created_at for t in todos)
    where = match(project=project) & clause("kind != ? AND created_at > ?", "todo", since)
    return _match(store, todos, store.query(where))


def closing_updates(
    pairs: list[tuple[Memory, Memory]], by: str, at: str
) -> tuple[list[archive.ArchiveEntry], dict[str, dict[str, Any]]]:
    """Archive entries and field updates that close each TODO, citing what said it is done."""
    entries = []
    updates: dict[str, dict[str, Any]] = {}
    for todo, later in pairs:
        entries.append(
            archive.ArchiveEntry(todo, f"done: {later.kind} {later.id} says {later.text[:200]!r}")
        )
        updates[todo.id] = {
            "status": "archived",
            "updated_at": at,
            "history": [
                *todo.history,
                {"at": at, "by": by, "done": later.id, "text": later.text[:500]},
            ],
        }
    return entries, updates


def close_done_by(store: MemoryStore, settings: Settings, stored: list[Memory]) -> list[str]:
    """Close the active TODOs that the just-stored ``stored`` memories say are done, and the
    just-stored TODOs that a memory said later (an older session read after a newer one) says
    are done.

    Called by the pipeline right after a segment's memories are written, under the store's
    write lock, so a TODO done in a later session is never offered as open at the next
    session start. Returns the ids of the TODOs closed (archived, as the cleanup job does).
    """
    later = [m for m in stored if m.kind in CLOSING_KINDS and m.status == "active"]
    later = [m for m in later if done_sentences(m.text) or m.text.startswith(LISTED_DONE)]
    fresh = [m for m in stored if m.kind == "todo" and m.status == "active" and not m.pinned]
    if not later and not fresh:
        return []
    pairs: list[tuple[Memory, Memory]] = []
    with store.write_lock:
        for project in sorted({m.project for m in [*later, *fresh]}):
            mine = [m for m in later if m.project == project]
            if mine:
                pairs += _match(store, active_todos(store, project), mine)
            closed = {t.id for t, _ in pairs}
            new = [t for t in fresh if t.project == project and t.id not in closed]
            if new:
                since = min(t.created_at for t in new)
                where = match(project=project) & clause(
                    "kind != ? AND created_at > ?", "todo", since
                )
                pairs += _match(store, new, store.query(where))
        if not pairs:
            return []
        at = now_iso()
        entries, updates = closing_updates(pairs, "todo-closed-on-store", at)
        archive.append(settings.home, entries, datetime.now(UTC), at)
        store.update_fields(updates)
    for todo, later_memory in pairs:
        log.info("TODO %s closed: %s says it is done", todo.id, later_memory.id)
    return [todo.id for todo, _ in pairs]
