"""What a hook injects: a small, budgeted block of memories that helps instead of bloating.

- ``user-prompt-submit``: memories relevant to the prompt, in the session's project plus the
  user-wide scope. Relevance is the semantic cosine between the prompt and the memory; under
  ``settings.relevance_threshold`` nothing qualifies, so an unrelated prompt injects nothing.
  Excerpts (raw turns) qualify only when they are very relevant: typed memories come first.
- ``session-start``: a project brief: pinned memories (always), open TODOs, recent decisions,
  preferences, and the last session's summary.

Every block sits between ``<memd-context>`` and ``</memd-context>``, so the transcript parser
drops it and memd never re-learns its own injection. A memory injected earlier in a session is
not injected again in that session. Superseded and archived memories are never injected.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memd import retrieve
from memd.heap import trim_heap
from memd.models import USER_SCOPE, Memory
from memd.project import resolve_project
from memd.store import from_row, sql_in, sql_str

if TYPE_CHECKING:
    from memd.app import App
    from memd.settings import Settings

log = logging.getLogger(__name__)

OPEN_TAG = "<memd-context>"
CLOSE_TAG = "</memd-context>"
HEADER = (
    "# memd: memories from earlier sessions. They may be outdated; "
    "the current conversation wins on any conflict."
)
"""Starts with ``memd.transcript.MEMD_CONTEXT_HEADER``, which the parser also recognizes."""

HARD_CAP = 10_000
"""Claude Code's cap on hook output, in characters."""
MAX_ITEM_CHARS = 400
EXCERPT_MARGIN = 0.15
"""Excerpts need this much more than the threshold: injection prefers typed memories."""
SEARCH_DEPTH = 16
QUERY_HEAD = 400
QUERY_TAIL = 200
MAX_SESSIONS = 512
MAX_IDS_PER_SESSION = 2000
STATE_PREFIX = "injected:"
CACHE_MAX_ROWS = 20_000
"""A project with more active memories than this is searched in the table instead."""
CACHE_TOTAL_ROWS = 100_000
"""Vectors kept in memory, all projects together (int8: 38 MB at 384 dimensions)."""
CACHE_MAX_AGE = 600.0
TRIM_AFTER_BUILD_ROWS = 1000
"""Building an entry this big frees enough to hand back to the OS at once."""
CACHE_COLUMNS = ["id", "text", "kind", "project", "importance", "pinned", "status"]
CACHE_COLUMNS += ["created_at", "updated_at", "hits"]
"""What injection reads of a memory (not its sources, history or keywords)."""
FORGET_AFTER_DAYS = 30
"""Sessions without an injection for this long are forgotten (their dedupe set is dropped)."""
PRUNE_EVERY_SECONDS = 3600

SECTIONS = (
    ("pinned", "Pinned"),
    ("summary", "Last session"),
    ("decision", "Decisions"),
    ("todo", "Open TODOs"),
    ("preference", "Preferences"),
    ("fact", "Facts"),
    ("bugfix", "Fixes"),
    ("progress", "Progress"),
    ("excerpt", "Excerpts from earlier sessions"),
)

BRIEF_LIMITS = {"todo": 8, "decision": 8, "preference": 6, "summary": 1}
"""How many of each kind a session-start brief considers before the budget trims it."""


@dataclass
class Item:
    """One memory offered for injection, with why and how much it matters."""

    memory: dict[str, Any]
    section: str
    priority: float
    why: str


@dataclass
class Injection:
    text: str = ""
    chosen: list[dict[str, Any]] = field(default_factory=list)


def query_text(prompt: str) -> str:
    """What of a prompt is embedded: its head and tail. Embedding cost grows with tokens (a
    200-word prompt took 98 ms here, 12 words 15 ms), and long prompts are mostly pasted
    material between the request at the start and the question at the end."""
    if len(prompt) <= QUERY_HEAD + QUERY_TAIL:
        return prompt
    return prompt[:QUERY_HEAD] + " … " + prompt[-QUERY_TAIL:]


def clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def line_for(memory: dict[str, Any]) -> str:
    day = (memory.get("updated_at") or memory.get("created_at") or "")[:10]
    scope = " [user-wide]" if memory.get("project") == USER_SCOPE else ""
    return f"- {clip(memory['text'])}{scope}" + (f" ({day})" if day else "")


def render(items: list[Item]) -> str:
    """The block for ``items``, grouped by section in a fixed order."""
    if not items:
        return ""
    lines = [OPEN_TAG, HEADER]
    for key, title in SECTIONS:
        group = [i for i in items if i.section == key]
        if group:
            lines.append(f"{title}:")
            lines.extend(line_for(i.memory) for i in group)
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


def fit(items: list[Item], budget: int) -> list[Item]:
    """Keep the most important items whose rendered block stays within ``budget`` characters.

    Items are tried from the highest priority down; one that does not fit is dropped, so the
    least relevant and least important go first.
    """
    budget = min(budget, HARD_CAP)
    kept: list[Item] = []
    for item in sorted(items, key=lambda i: -i.priority):
        if len(render([*kept, item])) <= budget:
            kept.append(item)
    return kept


class SessionMemory:
    """Which memory ids each session has already been given. Bounded; persisted via ``State``."""

    def __init__(self, state: Any = None) -> None:
        self.state = state
        self._sessions: OrderedDict[str, dict[str, None]] = OrderedDict()
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._pruned = 0.0

    def _ids(self, session_id: str) -> dict[str, None]:
        ids = self._sessions.get(session_id)
        if ids is None:
            ids = dict.fromkeys(self._load(session_id))
            self._sessions[session_id] = ids
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        return ids

    def _load(self, session_id: str) -> list[str]:
        if self.state is None:
            return []
        try:
            raw = self.state.get(STATE_PREFIX + session_id) or {}
            return [str(i) for i in raw.get("ids", [])]
        except Exception as exc:  # state is best effort here: never fail a hook for it
            log.warning("cannot read injected ids of session %s: %s", session_id, exc)
            return []

    def claim(self, session_id: str, ids: Iterable[str]) -> set[str]:
        """The ids not yet given to the session, marked as given now (atomic)."""
        if not session_id:
            return set(ids)
        with self._lock:
            seen = self._ids(session_id)
            fresh = {i for i in ids if i not in seen}
            for i in fresh:
                seen[i] = None
            while len(seen) > MAX_IDS_PER_SESSION:
                del seen[next(iter(seen))]
            if fresh:
                self._dirty.add(session_id)
            return fresh

    def given(self, session_id: str) -> set[str]:
        with self._lock:
            return set(self._ids(session_id)) if session_id else set()

    def reset(self, session_id: str) -> None:
        """The conversation lost its context (clear, compact): everything may be given again."""
        with self._lock:
            self._sessions[session_id] = {}
            self._dirty.add(session_id)

    def persist(self) -> int:
        """Write the changed sessions to state, in one transaction; returns how many."""
        with self._lock:
            dirty = {s: list(self._sessions.get(s, {})) for s in self._dirty}
            self._dirty.clear()
        if self.state is None:
            return 0
        now = time.time()
        try:
            with self.state.transaction():
                for session_id, ids in dirty.items():
                    self.state.set(STATE_PREFIX + session_id, {"ids": ids, "at": now})
                if now - self._pruned > PRUNE_EVERY_SECONDS:
                    self._pruned = now
                    self.prune(now - FORGET_AFTER_DAYS * 86400)
        except Exception as exc:  # best effort: dedupe still works in memory
            log.warning("cannot save the injected ids of %d session(s): %s", len(dirty), exc)
        return len(dirty)

    def prune(self, before: float) -> int:
        """Forget sessions whose last injection is older than ``before`` (a timestamp)."""
        old = [
            key
            for key, value in self.state.items(STATE_PREFIX).items()
            if not isinstance(value, dict) or float(value.get("at") or 0) < before
        ]
        for key in old:
            self.state.delete(key)
        return len(old)


def quantize(vectors: Any) -> tuple[Any, Any]:
    """int8 codes and a float32 scale per row, so that ``codes[i] * scales[i] ≈ vectors[i]``."""
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return np.ascontiguousarray(codes), scales


class VectorCache:
    """Each recently used project's active memories (vectors and rows), in memory, for hooks.

    A hook then costs one matrix-vector product (~0.4 ms for 5,000 memories) instead of a
    LanceDB vector search with a project prefilter (~80 ms at 100k rows here) plus reading the
    rows. Vectors are kept as int8 codes with one float32 scale per row: a quarter of float32's
    memory, and a cosine within 0.002 of the exact one, so rankings differ only between near
    ties. (float16 took half the memory but 2.2 ms per product: numpy converts it slowly.) The
    product runs without BLAS threads (``einsum``), whose spinning made a 0.3 ms product take
    8 ms on a busy 2-core machine.

    Freshness: an entry is valid for one state of the table (``MemoryStore.mutations``). Every
    write, delete, supersession or archiving changes it, so a stale memory is never injected.
    The one exception is the hit counters the injector itself writes (:meth:`touch`): they
    change no vector and no status, so the entries carry over to the new state instead of
    being rebuilt.
    """

    def __init__(
        self,
        store: Any,
        max_rows: int = CACHE_MAX_ROWS,
        total_rows: int = CACHE_TOTAL_ROWS,
        max_age: float = CACHE_MAX_AGE,
    ) -> None:
        self.store = store
        self.max_rows = max_rows
        self.total_rows = total_rows
        self.max_age = max_age
        self.generation = 0
        self.builds = 0
        self._entries: OrderedDict[str, tuple[Any, Any, Any, float]] = OrderedDict()
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def signature(self) -> Any:
        return (self.generation, id(self.store.table), self.store.mutations)

    def touch(self, touch: Callable[[list[str]], None], ids: list[str]) -> None:
        """Run the hit-counter update ``touch(ids)``; entries stay valid across it."""
        with self.store.write_lock:  # no other write can slip in between the two signatures
            before = self.signature()
            touch(ids)
            after = self.signature()
        with self._lock:
            for project, (sig, rows, matrix, built) in list(self._entries.items()):
                if sig == before:
                    self._entries[project] = (after, rows, matrix, built)

    def rows(self, project: str) -> tuple[Any, Any] | None:
        """(arrow rows, (int8 codes, row scales)) of the project's active memories; None: too
        many."""
        import numpy as np
        import pyarrow as pa

        with self._lock:
            sig = self.signature()
            hit = self._entries.get(project)
            if hit is not None and hit[0] == sig and time.monotonic() - hit[3] < self.max_age:
                self._entries.move_to_end(project)
                return hit[1], hit[2]
            table = self.store.table
            if table is None:
                return None
            where = f"project = {sql_str(project)} AND status = 'active'"
            count = self.store.count(where)
            if count > self.max_rows:
                return None
            query = table.search().where(where).select([*CACHE_COLUMNS, "vector"])
            # In batches: one float32 copy of a whole project at once stayed in RSS afterwards.
            parts, scales, batches = [], [], []
            for batch in query.limit(max(1, count)).to_batches(1024):
                column = batch.column("vector")
                flat = column.flatten().to_numpy(zero_copy_only=False)
                codes, scale = quantize(flat.reshape(batch.num_rows, column.type.list_size))
                parts.append(codes)
                scales.append(scale)
                batches.append(batch.drop_columns(["vector"]))
            if not batches:
                matrix = (np.zeros((0, 1), dtype=np.int8), np.zeros(0, dtype=np.float32))
                rows = pa.table({c: [] for c in CACHE_COLUMNS})
            else:
                matrix = (np.concatenate(parts), np.concatenate(scales))
                rows = pa.Table.from_batches(batches).combine_chunks()
            self._entries[project] = (sig, rows, matrix, time.monotonic())
            self._entries.move_to_end(project)
            while len(self._entries) > 1 and self.cached_rows() > self.total_rows:
                self._entries.popitem(last=False)
            self.builds += 1
            if count >= TRIM_AFTER_BUILD_ROWS:
                del parts, scales, batches, query
                trim_heap()  # the read left ~4x the entry's size behind (a few ms)
            return rows, matrix

    def cached_rows(self) -> int:
        return sum(entry[1].num_rows for entry in self._entries.values())

    def search(
        self, vector: list[float], projects: list[str], limit: int
    ) -> list[tuple[Memory, float]] | None:
        """The nearest active memories in ``projects`` with their cosine; None: not cacheable."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        scored: list[tuple[float, int, int]] = []
        tables: list[Any] = []
        for project in dict.fromkeys(projects):
            got = self.rows(project)
            if got is None:
                return None
            rows, (codes, scales) = got
            if rows.num_rows == 0:
                continue
            sims = np.einsum("ij,j->i", codes, query) * scales
            n = rows.num_rows
            top = np.argpartition(-sims, limit)[:limit] if n > limit else np.arange(n)
            scored += [(float(sims[i]), len(tables), int(i)) for i in top]
            tables.append(rows)
        scored.sort(key=lambda t: -t[0])
        scored = scored[:limit]
        picked: dict[tuple[int, int], dict[str, Any]] = {}
        for t, rows in enumerate(tables):
            indices = [i for _, which, i in scored if which == t]
            if indices:
                for i, row in zip(indices, rows.take(indices).to_pylist(), strict=True):
                    picked[(t, i)] = row
        out = []
        for sim, t, i in scored:
            memory = from_row(picked[(t, i)])
            if memory.status == "active":
                out.append((memory, sim))
        return out


class QueryBatcher:
    """Embeds queries that arrive together in one model call (one thread, a queue).

    Alone, a query waits only for a thread hand-off; in a burst of hooks, up to ``max_batch``
    queries share one call, which costs about a third of the time per query of single calls.
    """

    def __init__(self, embed: Callable[[list[str]], list[list[float]]], max_batch: int = 16):
        self._embed = embed
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[tuple[str, Future[list[float]]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.batches = 0
        self.queries = 0

    def embed_one(self, text: str) -> list[float]:
        future: Future[list[float]] = Future()
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="memd-embed", daemon=True
                    )
                    self._thread.start()
        self._queue.put((text, future))
        return future.result()

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(5)
            self._thread = None

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            try:
                vectors = self._embed([text for text, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            self.queries += len(batch)
            for (_, future), vector in zip(batch, vectors, strict=True):
                future.set_result(vector)


class Injector:
    """Builds the context for hooks. Thread-safe: the daemon calls it from its read threads."""

    def __init__(self, app: App, settings: Settings, state: Any = None) -> None:
        self.app = app
        self.settings = settings
        self.queries = QueryBatcher(lambda texts: app.store.embedder.embed(texts))
        self.vectors = VectorCache(app.store)
        self.sessions = SessionMemory(state)
        self._touch: dict[str, None] = {}
        self._touch_lock = threading.Lock()
        self.injections = 0
        self.memories_injected = 0

    # ---- the two hooks
    def prompt_context(
        self, payload: dict[str, Any], *, dedupe: bool = True, touch: bool = True
    ) -> Injection:
        prompt = str(payload.get("prompt") or "").strip()
        if len(prompt) < 3 or prompt.startswith("/"):
            return Injection()
        project = resolve_project(payload.get("cwd") or None)
        items = self.relevant(self.search(prompt, project))
        return self.finish(
            items, payload, self.settings.prompt_budget_chars, "prompt", dedupe, touch
        )

    def session_context(
        self, payload: dict[str, Any], *, dedupe: bool = True, touch: bool = True
    ) -> Injection:
        session_id = str(payload.get("session_id") or "")
        if dedupe and session_id and payload.get("source") in ("clear", "compact"):
            self.sessions.reset(session_id)
        project = resolve_project(payload.get("cwd") or None)
        items = self.brief(project, session_id)
        return self.finish(
            items, payload, self.settings.session_start_budget_chars, "brief", dedupe, touch
        )

    def warm(self, projects: Iterable[str]) -> int:
        """Build the vector cache of ``projects`` and the user-wide scope ahead of their first
        hook (at 5,000 memories a build takes ~40 ms). Returns the rows cached."""
        for project in dict.fromkeys([*projects, USER_SCOPE]):
            try:
                self.vectors.rows(project)
            except Exception as exc:  # best effort: the first hook builds it instead
                log.warning("cannot warm the vector cache of %s: %s", project, exc)
        return self.vectors.cached_rows()

    # ---- choosing
    def search(self, prompt: str, project: str) -> list[dict[str, Any]]:
        """The vector half of the hybrid search, ranked and explained like ``retrieve.search``.

        Injection qualifies a memory by its semantic similarity alone, and a memory found only
        by the full-text index has none, so the full-text half would cost time for nothing.
        """
        store = self.app.store
        query = retrieve.normalize_query(query_text(prompt))
        if not query or store.table is None:
            return []
        vector = self.queries.embed_one(query)
        by_vec = self.vectors.search(vector, [project, USER_SCOPE], SEARCH_DEPTH)
        if by_vec is None:  # a project too big to cache: ask the table
            where = retrieve.where_clause([project, USER_SCOPE], None, ("active",))
            by_vec = store.vector_search(vector, where, SEARCH_DEPTH)
        return retrieve.rank(by_vec, [], SEARCH_DEPTH)

    def relevant(self, results: list[dict[str, Any]]) -> list[Item]:
        """Results above the relevance threshold, as items ranked by relevance and importance."""
        threshold = self.settings.relevance_threshold
        items = []
        for r in results:
            if r.get("status", "active") != "active":
                continue
            semantic = float(r["score_breakdown"]["semantic"])
            need = threshold + (EXCERPT_MARGIN if r["kind"] == "excerpt" else 0.0)
            if semantic < need:
                continue
            priority = 0.8 * semantic + 0.2 * float(r["importance"])
            if r["kind"] == "excerpt":
                priority -= 0.5
            section = "pinned" if r.get("pinned") else r["kind"]
            items.append(Item(r, section, priority, retrieve.explain(r)))
        return items

    def brief(self, project: str, session_id: str = "") -> list[Item]:
        """Pinned memories, open TODOs, recent decisions, preferences, the last summary."""
        kinds = sorted(BRIEF_LIMITS)
        where = (
            f"{sql_in('project', [project, USER_SCOPE])} AND status = 'active' AND "
            f"(pinned = true OR {sql_in('kind', kinds)})"
        )
        memories = self.app.store.query(where)
        memories.sort(key=lambda m: m.updated_at or m.created_at, reverse=True)
        items: list[Item] = []
        taken: dict[str, int] = {}
        for m in memories:
            if m.status != "active":
                continue
            if m.pinned:
                items.append(self.brief_item(m, "pinned", 4.0 + m.importance, "pinned"))
                continue
            if m.project == USER_SCOPE and m.kind != "preference":
                continue
            if (
                m.kind == "summary"
                and session_id
                and all(s.session_id == session_id for s in m.sources if s.session_id)
                and m.sources
            ):
                continue  # this session's own summary is not "the last session"
            if taken.get(m.kind, 0) >= BRIEF_LIMITS[m.kind]:
                continue
            rank = taken.get(m.kind, 0)
            taken[m.kind] = rank + 1
            base = {"summary": 3.0, "todo": 2.5, "decision": 2.0, "preference": 1.5}[m.kind]
            priority = base + m.importance - 0.05 * rank
            why = f"{m.kind}, newest #{rank + 1}, importance {m.importance:.2f}"
            items.append(self.brief_item(m, m.kind, priority, why))
        return items

    @staticmethod
    def brief_item(memory: Memory, section: str, priority: float, why: str) -> Item:
        return Item(memory.to_dict(), section, priority, why)

    def finish(
        self,
        items: list[Item],
        payload: dict[str, Any],
        budget: int,
        label: str,
        dedupe: bool,
        touch: bool,
    ) -> Injection:
        session_id = str(payload.get("session_id") or "")
        if dedupe and session_id:
            given = self.sessions.given(session_id)
            items = [i for i in items if i.memory["id"] not in given]
        kept = fit(items, budget)
        if dedupe and session_id:
            fresh = self.sessions.claim(session_id, [i.memory["id"] for i in kept])
            kept = [i for i in kept if i.memory["id"] in fresh]
        if not kept:
            return Injection()
        if touch:
            self.queue_touch(i.memory["id"] for i in kept)
            self.injections += 1
            self.memories_injected += len(kept)
        for i in kept:
            log.debug(
                "inject %s session=%s id=%s kind=%s why: %s",
                label,
                session_id or "-",
                i.memory["id"],
                i.memory["kind"],
                i.why,
            )
        chosen = [
            {"id": i.memory["id"], "kind": i.memory["kind"], "text": i.memory["text"], "why": i.why}
            for i in kept
        ]
        return Injection(render(kept), chosen)

    # ---- usage counters, written in batch by the daemon's writer
    def queue_touch(self, ids: Iterable[str]) -> None:
        with self._touch_lock:
            self._touch.update(dict.fromkeys(ids))

    def pending_writes(self) -> bool:
        """Whether :meth:`flush` has anything to write."""
        return bool(self._touch) or bool(self.sessions._dirty)

    def take_touches(self) -> list[str]:
        with self._touch_lock:
            ids, self._touch = list(self._touch), {}
        return ids

    def flush(self, touch: Callable[[list[str]], None] | None = None) -> int:
        """Write queued hits/last_used in one update and persist the per-session sets."""
        ids = self.take_touches()
        if ids:
            try:
                self.vectors.touch(touch or self.app.store.touch, ids)
            except Exception:
                self.queue_touch(ids)  # keep them for the next flush
                raise
        self.sessions.persist()
        return len(ids)
