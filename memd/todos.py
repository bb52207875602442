"""Closing TODOs that a later memory or excerpt says are done (part of the cleanup job).

Conservative on purpose: a TODO is closed only when a later text states completion, carries no
negation, is semantically close (cosine >= 0.6) and shares most of the TODO's keywords.
"""

from __future__ import annotations

import math
import re

import numpy as np

from memd.merge import STOP, tokens
from memd.models import Memory
from memd.store import MemoryStore, sql_str

TODO_DONE_MIN_COSINE = 0.6

DONE_WORDS = re.compile(
    r"\b(?:done|fixed|completed?|finished|implemented|resolved)\b|已完成|完成了|搞定|修好了|已修复",
    re.I,
)
NOT_DONE = re.compile(
    r"\b(?:not|never|yet|still|todo|pending|almost|partially|half|remaining|next)\b|n't"
    r"|未完成|没有?完成|还没|尚未|没搞定|没修好|待办",
    re.I,
)
GENERIC = frozenset(
    {
        *("todo", "need", "needs", "should", "must", "will", "later"),
        *("add", "added", "adding", "fix", "fixed", "fixing", "done"),
        *("finish", "finished", "finishing", "complete", "completed"),
        *("implement", "implemented", "resolve", "resolved"),
    }
)


def content_tokens(text: str) -> set[str]:
    return tokens(text) - STOP - GENERIC


def states_done(todo: Memory, later: Memory) -> bool:
    """``later`` says ``todo`` is done: a completion word, no negation, most keywords shared."""
    if not DONE_WORDS.search(later.text) or NOT_DONE.search(later.text):
        return False
    wanted = content_tokens(todo.text)
    shared = wanted & content_tokens(later.text)
    return len(shared) >= max(2, math.ceil(0.5 * len(wanted)))


def done_todos(store: MemoryStore, project: str) -> list[tuple[Memory, Memory]]:
    """(todo, evidence) for active unpinned TODOs that a later memory or excerpt says are done.

    Evidence: created after the TODO, states completion without negation, cosine >= 0.6 and
    most of the TODO's keywords shared. One scan of the project, then one matrix product.
    """
    todos = store.query(
        f"project = {sql_str(project)} AND status = 'active' AND kind = 'todo' AND pinned = false"
    )
    if not todos:
        return []
    since = min(t.created_at for t in todos)
    where = f"project = {sql_str(project)} AND kind != 'todo' AND created_at > {sql_str(since)}"
    later = [m for m in store.query(where) if DONE_WORDS.search(m.text)]
    later = [m for m in later if not NOT_DONE.search(m.text)]
    if not later:
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
