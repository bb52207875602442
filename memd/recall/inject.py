"""What a hook injects, and when: the injection policy of the two hooks.

- ``user-prompt-submit``: the memories that :func:`memd.recall.retrieve.recall` finds relevant to the
  prompt (the same recall as ``memd search``), in the session's project plus the user-wide
  scope. An unrelated prompt injects nothing.
- ``session-start``: a project brief: every pinned memory (or as many as fit, and how many
  more there are), open TODOs, recent decisions, preferences and the last session's summary.

:mod:`memd.recall.choose` fills the block within its budget, :mod:`memd.recall.block` renders it, and
:mod:`memd.recall.injected` remembers what each session was given: a memory injected earlier in a
session is not injected again in that session. Superseded and archived memories are never
injected. :mod:`memd.recall.codecheck` marks the memories shown whose code moved, went or changed in
the working tree of the hook's ``cwd``. The hits of the memories injected are queued here and
written in batch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from memd import kinds
from memd.extract import forget_requests
from memd.models import USER_SCOPE, Memory
from memd.names import COMMANDS_TOPIC, LINT_TOPIC, STOPPED_TOPIC
from memd.project import session_project
from memd.recall import disputed, retrieve, stale
from memd.recall.block import render
from memd.recall.choose import choose
from memd.recall.codecheck import CodeCheck
from memd.recall.hits import Chosen, Hit, LeftOut, explain
from memd.recall.injected import SessionMemory
from memd.store import forget_said
from memd.store.filters import is_in, match
from memd.store.upsert import SUPERSEDABLE
from memd.text import bridge, dictionary, searchterms

if TYPE_CHECKING:
    from memd.recall.queries import QueryBatcher
    from memd.recall.vectors import VectorCache
    from memd.settings import Settings
    from memd.state import State
    from memd.store.table import MemoryStore

log = logging.getLogger(__name__)


HARD_CAP = 10_000
"""Claude Code's cap on hook output, in characters."""
SEARCH_DEPTH = 24

BRIEF_LIMITS = {k.name: k.brief_limit for k in kinds.KINDS if k.brief_limit}
"""How many of each kind a session-start brief considers before the budget trims it (the one
progress memory is where the last session's work stopped)."""
BRIEF_BASE = {"pinned": 4.0, **{k.name: k.brief_base for k in kinds.KINDS if k.brief_limit}}
BRIEF_COMMANDS = 5
"""How many of the project's commands ("Tests run with `pytest -q`") a brief considers: the
newest of each check, so a session starts knowing how to test, build and lint."""
BRIEF_COMMAND_BASE = 1.4


@dataclass
class Injection:
    text: str = ""
    chosen: list[Chosen] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    reason: str = ""
    """Why nothing was injected (empty when something was)."""


class Host(Protocol):
    """What an :class:`Injector` needs of its owner (the daemon's ``App``): the store, and the
    vector cache and query batcher that every recall path shares."""

    store: MemoryStore

    def recall_cache(self) -> tuple[VectorCache, QueryBatcher]: ...


class Injector:
    """Builds the context for hooks. Thread-safe: the daemon calls it from its read threads."""

    def __init__(self, app: Host, settings: Settings, state: State | None = None) -> None:
        self.app = app
        self.settings = settings
        self.vectors, self.queries = app.recall_cache()
        self.sessions = SessionMemory(state)
        self.code = CodeCheck(state)
        self._touch: dict[str, None] = {}
        self._touch_lock = threading.Lock()
        self.injections = 0
        self.memories_injected = 0

    # ---- the two hooks
    def prefetch(self, payload: dict[str, Any], write: Callable[..., Any] | None = None) -> None:
        """Start embedding the prompt of a ``user-prompt-submit`` payload now, before its
        request waits for a read thread: :meth:`prompt_context` joins the same embedding; and
        with ``write`` (the writer's submit) archive what the prompt asks to forget
        (:meth:`forget_asked`). Never raises (a failure shows when the prompt is recalled)."""
        try:
            if write is not None:
                self.forget_asked(payload, write)
            prompt = str(payload.get("prompt") or "").strip()
            if len(prompt) >= 3 and not prompt.startswith("/"):
                query = retrieve.normalize_query(prompt)
                if query:
                    self.queries.submit(query)
        except Exception as exc:  # the recall itself reports it
            log.debug("cannot start the prompt's embedding early: %s", exc)

    def prompt_context(
        self, payload: dict[str, Any], *, dedupe: bool = True, touch: bool = True
    ) -> Injection:
        prompt = str(payload.get("prompt") or "").strip()
        if len(prompt) < 3 or prompt.startswith("/"):
            return Injection(reason="no prompt to search for (empty, too short or a command)")
        if forget_requests.is_forget_request(prompt):
            return Injection(reason="a request to forget: nothing is recalled for it")
        project = session_project(payload.get("cwd") or None)
        results = self.recall(prompt, project)
        query_terms = searchterms.terms(retrieve.normalize_query(prompt))
        return self.finish(
            results,
            payload,
            project,
            self.settings.prompt_budget_chars,
            "prompt",
            dedupe,
            touch,
            query_terms=query_terms,
        )

    def session_context(
        self, payload: dict[str, Any], *, dedupe: bool = True, touch: bool = True
    ) -> Injection:
        session_id = str(payload.get("session_id") or "")
        if dedupe and session_id and payload.get("source") in ("clear", "compact"):
            self.sessions.reset(session_id)
        project = session_project(payload.get("cwd") or None)
        return self.finish(
            self.brief(project, session_id),
            payload,
            project,
            self.settings.session_start_budget_chars,
            "brief",
            dedupe,
            touch,
        )

    def warm(self, projects: Iterable[str]) -> int:
        """Build the vector cache of ``projects`` and the user-wide scope ahead of their first
        hook (at 5,000 memories a build takes ~40 ms). Returns the rows cached."""
        scope = list(dict.fromkeys([*projects, USER_SCOPE]))
        for project in scope:
            try:
                self.vectors.rows(project)
            except Exception as exc:  # best effort: the first hook builds it instead
                log.warning("cannot warm the vector cache of %s: %s", project, exc)
        # Parsed once (~70 ms), not on the first prompt. (The table's full-text index is not
        # warmed: a hook's full text runs over the cache; only filtered searches read it.)
        bridge.glossary()
        # A project with Chinese text will bridge prompts through the broad dictionary: load it
        # in the background now (1-3 s on a new home), not on its first prompt.
        try:
            if any(self.vectors.has_chinese(p) for p in scope):
                dictionary.load_soon()
        except Exception as exc:  # best effort, like the cache itself
            log.warning("cannot check the warmed projects for Chinese text: %s", exc)
        return self.vectors.cached_rows()

    # ---- choosing
    def recall(self, prompt: str, project: str) -> list[Hit]:
        """Every candidate for the prompt, scored and decided by :func:`retrieve.recall`."""
        return retrieve.recall(
            self.app.store,
            prompt,
            [project],
            depth=SEARCH_DEPTH,
            weights=retrieve.weights_from(self.settings),
            vectors=self.vectors,
            embed_later=self.queries.submit,
        )

    def brief(self, project: str, session_id: str = "") -> list[Hit]:
        """Pinned memories, open TODOs, recent decisions, preferences, how the checks run, the
        latest bug fixes, the last summary: as results in the recall shape, ranked by the
        recall's own weights (no query, so no relevance: importance, recency and pinning)."""
        kinds = sorted(BRIEF_LIMITS)
        where = match(project=[project, USER_SCOPE], status="active") & (
            match(pinned=True) | match(kind=kinds) | match(kind="fact", topic=COMMANDS_TOPIC)
        )
        memories = self.app.store.query(where)
        memories.sort(key=lambda m: (m.said_at(), m.importance, m.id), reverse=True)  # stable
        weights = retrieve.weights_from(self.settings)
        out: list[Hit] = []
        taken: dict[str, int] = {}
        checks: set[str] = set()
        for m in memories:
            if m.status != "active":
                continue
            section = "pinned" if m.pinned else m.kind
            if not m.pinned and m.kind == "fact":  # a command: the newest of each check
                check = m.text.split(" with `", 1)[0]
                if m.project == USER_SCOPE or check in checks or len(checks) >= BRIEF_COMMANDS:
                    continue
                checks.add(check)
                out.append(retrieve.brief_result(m, weights, BRIEF_COMMAND_BASE))
                continue
            if not m.pinned:
                if m.project == USER_SCOPE and m.kind != "preference":
                    continue
                if m.kind == "progress" and m.topic != STOPPED_TOPIC:
                    continue  # of progress, only where the work stopped
                if m.kind == "bugfix" and m.topic == LINT_TOPIC:
                    continue  # a lint rule suppressed: a convention, not a fix of behaviour
                if m.kind in ("summary", "progress") and session_id and own_summary(m, session_id):
                    continue  # this session's own summary is not "the last session"
                if taken.get(m.kind, 0) >= BRIEF_LIMITS[m.kind]:
                    continue
                taken[m.kind] = taken.get(m.kind, 0) + 1
            result = retrieve.brief_result(m, weights, BRIEF_BASE[section])
            if m.kind == "progress" and not m.pinned:
                result = replace(result, section="summary")  # shown under "Last session"
            out.append(result)
        stopped = {s.session_id for h in out if h.kind == "progress" for s in h.sources}
        return [  # where the work stopped says more than what was asked, in the same room
            h
            for h in out
            if h.kind != "summary"
            or h.pinned
            or stopped.isdisjoint(s.session_id for s in h.sources)
        ]

    def finish(
        self,
        results: list[Hit],
        payload: dict[str, Any],
        project: str,
        budget: int,
        label: str,
        dedupe: bool,
        touch: bool,
        query_terms: tuple[str, ...] = (),
    ) -> Injection:
        session_id = str(payload.get("session_id") or "")
        given = self.sessions.given(session_id) if dedupe and session_id else set()
        model_id = self.app.store.embedder.model_id
        typed = [r.id for r in results if r.relevant and r.kind in SUPERSEDABLE]
        vectors = self.vectors.vectors_of([project, USER_SCOPE], typed) if len(typed) > 1 else {}
        if label != "brief":
            results = second_tier(results, project)
        results = stale.mark_replaced(results, vectors, model_id)
        named = [r.id for r in results if r.status == "active" and r.memory.subject]
        if named:  # (their history says what they replaced; the cache has no history)
            full = self.app.store.query(is_in("id", named), limit=len(named))
            results = stale.mark_declared(results, {m.id: m for m in full})
        if label == "prompt":
            results = disputed.mark_disputed(results, str(payload.get("prompt") or ""))
        if label == "brief":  # the session's opening shows what holds now, nothing replaced
            results = [r for r in results if not r.replaced_by]
        plan = choose(
            results,
            given,
            min(budget, HARD_CAP),
            query_terms,
            label == "brief",
            vectors,
            model_id,
            self.code.marker(payload.get("cwd") or None),
        )
        kept = plan.items
        if dedupe and session_id and kept:
            fresh = self.sessions.claim(session_id, [i.memory.id for i in kept])
            kept = [i for i in kept if i.memory.id in fresh]
        if not kept:
            log.debug("inject %s session=%s: nothing (%s)", label, session_id or "-", plan.reason)
            return Injection(left_out=plan.left_out, reason=plan.reason)
        if touch:
            self.queue_touch(i.memory.id for i in kept)
            self.injections += 1
            self.memories_injected += len(kept)
        whys = [explain(i.memory.breakdown) for i in kept]
        for i, why in zip(kept, whys, strict=True):
            log.debug(
                "inject %s session=%s id=%s kind=%s why: %s",
                label,
                session_id or "-",
                i.memory.id,
                i.memory.kind,
                why,
            )
        chosen = [
            Chosen(i.memory, i.display, i.day, tuple(sorted(i.turns)), why, i.note, i.code)
            for i, why in zip(kept, whys, strict=True)
        ]
        return Injection(render(kept, plan.footer), chosen, plan.left_out)

    def forget_asked(self, payload: dict[str, Any], submit: Callable[..., Any]) -> None:
        """A prompt that asks to forget something it names: archive what carries it now,
        through ``submit`` (the writer thread: :func:`forget_said.prompt_job`)."""
        writer = getattr(self.app, "writer", False)
        job = writer and forget_said.prompt_job(self.app.store, self.settings, payload)
        if not job:
            return
        try:
            future = submit(job)
        except RuntimeError:  # shutting down: extraction honours it at the next start
            return
        future.add_done_callback(self.forgotten)

    def forgotten(self, future: Any) -> None:
        self.vectors.invalidate()
        if not future.cancelled() and future.exception() is not None:
            log.warning("archiving what a prompt asked to forget failed: %s", future.exception())

    # ---- usage counters, written in batch by the daemon's writer
    def queue_touch(self, ids: Iterable[str]) -> None:
        with self._touch_lock:
            self._touch.update(dict.fromkeys(ids))

    @property
    def queued_touches(self) -> int:
        """Memories whose hit counters wait for the next :meth:`flush`."""
        with self._touch_lock:
            return len(self._touch)

    def pending_writes(self) -> bool:
        """Whether :meth:`flush` has anything to write."""
        return bool(self._touch) or self.sessions.dirty or self.code.sightings.dirty

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
        self.code.sightings.persist()
        return len(ids)


SECOND_TIER = 0.4
"""Of the relevance threshold: once a prompt has a relevant memory (it is about this project's
work), the memories at least this share of the way there fill what room the block has left,
after every relevant one. On the tuning split of bench/realwork.py the terms a probe missed
were mostly in memories of the same work that scored just under the threshold."""


def second_tier(results: list[Hit], project: str) -> list[Hit]:
    """``results`` with the near misses of ``project`` (not user-wide memories: those go with
    every project) made relevant, ranked after every relevant result, when at least one result
    is relevant; unchanged otherwise (an unrelated prompt)."""
    if not any(r.relevant for r in results):
        return results
    out = []
    for r in results:
        near = r.relevance >= SECOND_TIER * r.threshold
        mine = r.project == project and r.status == "active"
        if not r.relevant and near and mine:
            r = replace(r, relevant=True, score=r.score - 1.0)
        out.append(r)
    return out


def own_summary(memory: Memory, session_id: str) -> bool:
    ids = [s.session_id for s in memory.sources if s.session_id]
    return bool(ids) and all(i == session_id for i in ids)
