"""What a hook injects: a small, budgeted block of distinct, relevant memories.

- ``user-prompt-submit``: the memories that :func:`memd.retrieve.recall` finds relevant to the
  prompt (the same recall as ``memd search``), in the session's project plus the user-wide
  scope. An unrelated prompt injects nothing.
- ``session-start``: a project brief: every pinned memory (or as many as fit, and how many
  more there are), open TODOs, recent decisions, preferences and the last session's summary.

Within a block, no two items cover the same transcript turns. Excerpts (windows of raw turns)
are shown turn by turn: the turns that carry the prompt's terms first, from every relevant
excerpt, then their neighbours while the budget lasts; a turn is shown whole unless it is long
(then cut to its matching sentences), and an excerpt cites only the turns it shows. Excerpts
sit under one line per day (oldest first), each turn labelled "user:" or "claude:". When two
memories disagree (same subject, different value) the newer comes first and both are marked.

Every block sits between ``<memd-context>`` and ``</memd-context>``, so the transcript parser
drops it and memd never re-learns its own injection. A memory injected earlier in a session is
not injected again in that session. Superseded and archived memories are never injected.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memd import bridge, lexical, retrieve, similar
from memd.filters import match
from memd.models import USER_SCOPE, Memory
from memd.project import resolve_project
from memd.upsert import SUPERSEDABLE

if TYPE_CHECKING:
    from memd.app import App
    from memd.settings import Settings

log = logging.getLogger(__name__)

OPEN_TAG = "<memd-context>"
CLOSE_TAG = "</memd-context>"
HEADER = (
    "# memd: memories from earlier sessions; may be outdated, this conversation wins; "
    "if they disagree, ask the user."
)
"""Starts with ``memd.transcript.MEMD_CONTEXT_HEADER``, which the parser also recognizes."""
SPEAKERS = {"assistant": "claude"}
"""How an excerpt's turn names its speaker in a block ("assistant: " costs 3 more characters
than "claude: " on every turn Claude said; "user: " stays)."""

HARD_CAP = 10_000
"""Claude Code's cap on hook output, in characters."""
MAX_ITEM_CHARS = 400
"""A typed memory is clipped to this many characters."""
MAX_EXCERPT_CHARS = 600
"""An excerpt that is not one line per turn (an older one) shows at most this much."""
WHOLE_TURN_CHARS = 500
"""A turn this short is shown whole; a longer one is cut to its matching sentences. (A turn
cut to one matching sentence loses the rest of what it said: at 280 characters a quarter of
LoCoMo's evidence turns were cut, and budgeted recall on half A was 0.595 instead of 0.704.)"""
KEEP_SHARE = 0.5
"""Of a long turn, the sentences whose match is at least half the best one's are kept."""
LINE_MATCH = 0.5
"""How much a turn's own match with the prompt (the weighted share of the prompt's terms it
carries, 0..1) adds to its excerpt's score when turns are ranked for the block. Picked on
LoCoMo half A (0.3-0.8 all within 0.01)."""
SEARCH_DEPTH = 24
MAX_SESSIONS = 512
MAX_IDS_PER_SESSION = 2000
STATE_PREFIX = "injected:"
FORGET_AFTER_DAYS = 30
"""Sessions without an injection for this long are forgotten (their dedupe set is dropped)."""
PRUNE_EVERY_SECONDS = 3600
LEFT_OUT_SHOWN = 12
"""How many left-out candidates a preview explains."""
SECTIONS = (
    ("pinned", "Pinned"),
    ("summary", "Last session"),
    ("decision", "Decisions"),
    ("todo", "Open TODOs"),
    ("preference", "Preferences"),
    ("fact", "Facts"),
    ("bugfix", "Fixes"),
    ("progress", "Progress"),
    ("excerpt", "Excerpts"),
)

BRIEF_LIMITS = {"todo": 8, "decision": 8, "preference": 6, "summary": 1}
"""How many of each kind a session-start brief considers before the budget trims it."""
BRIEF_BASE = {"pinned": 4.0, "summary": 3.0, "todo": 2.5, "decision": 2.0, "preference": 1.5}
DATE_PREFIX = re.compile(r"^\[(\d{4}-\d{2}-\d{2})\]\s*")
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


@dataclass
class Item:
    """One memory offered for injection: what it shows, why, and which turns it covers."""

    memory: dict[str, Any]
    section: str
    priority: float
    why: str
    display: str = ""
    turns: frozenset[str] = frozenset()
    """The transcript turns (source uuids) whose text this item shows."""
    note: str = ""
    """A mark such as "newer" or "older: may be outdated"."""
    day: str = ""
    """Set on excerpts: the day their turns were said, shown once per day above the items of
    that day (in its section) instead of on every line."""

    def __post_init__(self) -> None:
        if not self.display:
            self.display = clip(self.memory["text"])
        if not self.turns:
            self.turns = frozenset(source_uuids(self.memory))


@dataclass
class Injection:
    text: str = ""
    chosen: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    """Why nothing was injected (empty when something was)."""


def source_uuids(memory: dict[str, Any]) -> list[str]:
    return [str(s.get("uuid") or "") for s in memory.get("sources") or [] if s.get("uuid")]


def clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def day_of(memory: dict[str, Any]) -> str:
    """The day of what the memory says: its newest source turn's, else when it was stored."""
    said = [str(s.get("timestamp") or "") for s in memory.get("sources") or []]
    said = [t for t in said if t]
    return (max(said) if said else memory.get("updated_at") or memory.get("created_at") or "")[:10]


def line_for(item: Item) -> str:
    """The item's line (without its day line, for an item that has a ``day``)."""
    memory = item.memory
    scope = " [user-wide]" if memory.get("project") == USER_SCOPE else ""
    day = "" if item.day or DATE_PREFIX.match(item.display) else day_of(memory)
    note = f" [{item.note}]" if item.note else ""
    return f"- {item.display}{scope}" + (f" ({day})" if day else "") + note


def day_line(day: str) -> str:
    return f"{day}:"


def render(items: list[Item], footer: str = "") -> str:
    """The block for ``items``, grouped by section in a fixed order; within a section, the
    items without a ``day`` first, then the others by day, each day once on a line of its own
    (otherwise in the order given)."""
    if not items:
        return ""
    lines = [OPEN_TAG, HEADER]
    for key, title in SECTIONS:
        group = sorted((i for i in items if i.section == key), key=lambda i: i.day)
        if group:
            lines.append(f"{title}:")
            day = ""
            for i in group:
                if i.day and i.day != day:
                    lines.append(day_line(i.day))
                day = i.day
                lines.append(line_for(i))
    if footer:
        lines.append(footer)
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


def rendered_size(items: list[Item], footer: str = "") -> int:
    return len(render(items, footer))


class BlockSize:
    """The length :func:`render` would give, kept up to date item by item (rendering the whole
    block again for every candidate cost a hook ~1 ms)."""

    FIXED = (OPEN_TAG, HEADER, CLOSE_TAG)

    def __init__(self) -> None:
        self.chars = sum(len(line) for line in self.FIXED)
        self.lines = len(self.FIXED)
        self.sections: set[str] = set()
        self.days: set[tuple[str, str]] = set()

    def line(self, item: Item) -> int:
        """What ``item`` adds: its line, its section's title when it is the first, and its
        day's line when it is the first of that day in its section."""
        added = len(line_for(item)) + 1
        if item.section not in self.sections:
            added += len(SECTION_TITLES[item.section]) + 1
        if item.day and (item.section, item.day) not in self.days:
            added += len(day_line(item.day)) + 1
        return added

    def with_item(self, item: Item, footer: str = "") -> int:
        """The block's length with ``item`` added (and ``footer``)."""
        return self.now(footer) + self.line(item)

    def now(self, footer: str = "") -> int:
        """The block's length as it stands (its frame alone when empty), with ``footer``."""
        extra = len(footer) + 1 if footer else 0
        return self.chars + self.lines - 1 + extra

    @staticmethod
    def change(item: Item, display: str) -> int:
        """How many characters showing ``display`` instead of ``item``'s adds to its line."""
        before, shown = len(line_for(item)), item.display
        item.display = display
        try:
            return len(line_for(item)) - before
        finally:
            item.display = shown

    def grow(self, delta: int) -> None:
        """An item already counted now shows ``delta`` more characters."""
        self.chars += delta

    def add(self, item: Item) -> None:
        if item.section not in self.sections:
            self.sections.add(item.section)
            self.chars += len(SECTION_TITLES[item.section])
            self.lines += 1
        if item.day and (item.section, item.day) not in self.days:
            self.days.add((item.section, item.day))
            self.chars += len(day_line(item.day))
            self.lines += 1
        self.chars += len(line_for(item))
        self.lines += 1

    @classmethod
    def of(cls, items: list[Item]) -> BlockSize:
        size = cls()
        for item in items:
            size.add(item)
        return size

    def total(self, footer: str = "") -> int:
        if self.lines == len(self.FIXED):
            return 0  # nothing to show: no block at all
        extra = len(footer) + 1 if footer else 0
        return self.chars + self.lines - 1 + extra


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def excerpt_turns(memory: dict[str, Any]) -> tuple[str, list[tuple[str, str]] | None]:
    """An excerpt's day and its (turn uuid, line) pairs, in order; ``None`` for the pairs when
    its text is not one line per source turn (an older excerpt).

    An excerpt's text has one line per turn, in the order of its sources (the first line may
    start with a ``[YYYY-MM-DD]`` date)."""
    text = memory["text"]
    day = ""
    m = DATE_PREFIX.match(text)
    if m:
        day, text = m.group(1), text[m.end() :]
    lines = [line for line in text.split("\n") if line.strip()]
    sources = source_uuids(memory)
    if len(lines) != len(sources) or not lines:
        return day, None
    return day, list(zip(sources, lines, strict=True))


def spoken(line: str) -> str:
    """A turn's line with its speaker as a block names it (:data:`SPEAKERS`)."""
    speaker, sep, rest = line.partition(": ")
    return f"{SPEAKERS[speaker]}: {rest}" if sep and speaker in SPEAKERS else line


def show_turns(
    turns: list[tuple[str, str]], picked: Iterable[int], weights: dict[str, float]
) -> str:
    """The picked turns of an excerpt, in order (its day is shown apart: ``Item.day``): a
    turn longer than ``WHOLE_TURN_CHARS`` is cut to its matching sentences."""
    parts = []
    for n in sorted(picked):
        line = spoken(turns[n][1])
        parts.append(cut_turn(line, weights) if len(line) > WHOLE_TURN_CHARS else line)
    return " / ".join(parts)


def whole_excerpt(memory: dict[str, Any]) -> str:
    """An excerpt that is not one line per turn (an older one), shown whole (clipped)."""
    body = DATE_PREFIX.sub("", memory["text"], count=1)
    return clip("\n".join(spoken(line) for line in body.split("\n")), MAX_EXCERPT_CHARS)


def cut_turn(line: str, weights: dict[str, float]) -> str:
    """A long turn cut to its matching sentences (keeping its "speaker:" prefix)."""
    speaker, sep, rest = line.partition(": ")
    if not sep or len(speaker) > 40:
        speaker, rest = "", line
    said = sentences(rest)
    scores = [lexical.weighted_match(weights, s) for s in said]
    best = max(scores, default=0.0)
    hits = [i for i, score in enumerate(scores) if score > 0 and score >= KEEP_SHARE * best]
    if not hits:
        return clip(line, WHOLE_TURN_CHARS)
    chosen = " … ".join(said[i].strip() for i in hits)
    if hits[0] > 0:
        chosen = "… " + chosen
    if hits[-1] < len(said) - 1:
        chosen += " …"
    return (f"{speaker}: " if speaker else "") + chosen


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


class Injector:
    """Builds the context for hooks. Thread-safe: the daemon calls it from its read threads."""

    def __init__(self, app: App, settings: Settings, state: Any = None) -> None:
        self.app = app
        self.settings = settings
        self.vectors, self.queries = app.recall_cache()
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
            return Injection(reason="no prompt to search for (empty, too short or a command)")
        project = resolve_project(payload.get("cwd") or None)
        results = self.recall(prompt, project)
        query_terms = lexical.terms(retrieve.normalize_query(prompt))
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
        project = resolve_project(payload.get("cwd") or None)
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
        return self.vectors.cached_rows()

    # ---- choosing
    def recall(self, prompt: str, project: str) -> list[dict[str, Any]]:
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

    def brief(self, project: str, session_id: str = "") -> list[dict[str, Any]]:
        """Pinned memories, open TODOs, recent decisions, preferences, the last summary: as
        results in the recall shape, ranked by the recall's own weights (no query, so no
        relevance: importance, recency and pinning)."""
        kinds = sorted(BRIEF_LIMITS)
        where = match(project=[project, USER_SCOPE], status="active") & (
            match(pinned=True) | match(kind=kinds)
        )
        memories = self.app.store.query(where)
        memories.sort(key=lambda m: m.updated_at or m.created_at, reverse=True)
        weights = retrieve.weights_from(self.settings)
        out: list[dict[str, Any]] = []
        taken: dict[str, int] = {}
        for m in memories:
            if m.status != "active":
                continue
            section = "pinned" if m.pinned else m.kind
            if not m.pinned:
                if m.project == USER_SCOPE and m.kind != "preference":
                    continue
                if m.kind == "summary" and session_id and own_summary(m, session_id):
                    continue  # this session's own summary is not "the last session"
                if taken.get(m.kind, 0) >= BRIEF_LIMITS[m.kind]:
                    continue
                taken[m.kind] = taken.get(m.kind, 0) + 1
            out.append(retrieve.brief_result(m, weights, BRIEF_BASE[section]))
        return out

    def finish(
        self,
        results: list[dict[str, Any]],
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
        typed = [r["id"] for r in results if r.get("relevant", True) and r["kind"] in SUPERSEDABLE]
        vectors = self.vectors.vectors_of([project, USER_SCOPE], typed) if len(typed) > 1 else {}
        plan = choose(
            results,
            given,
            min(budget, HARD_CAP),
            query_terms,
            label == "brief",
            vectors,
            self.app.store.embedder.model_id,
        )
        kept = plan.items
        if dedupe and session_id and kept:
            fresh = self.sessions.claim(session_id, [i.memory["id"] for i in kept])
            kept = [i for i in kept if i.memory["id"] in fresh]
        if not kept:
            log.debug("inject %s session=%s: nothing (%s)", label, session_id or "-", plan.reason)
            return Injection(left_out=plan.left_out, reason=plan.reason)
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
            {
                "id": i.memory["id"],
                "kind": i.memory["kind"],
                "text": i.memory["text"],
                "shown": i.display,
                "day": i.day,
                "turns": sorted(i.turns),
                "why": i.why,
                "note": i.note,
                "score_breakdown": i.memory.get("score_breakdown", {}),
            }
            for i in kept
        ]
        return Injection(render(kept, plan.footer), chosen, plan.left_out)

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


def own_summary(memory: Memory, session_id: str) -> bool:
    ids = [s.session_id for s in memory.sources if s.session_id]
    return bool(ids) and all(i == session_id for i in ids)


@dataclass
class Plan:
    items: list[Item] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)
    footer: str = ""
    reason: str = ""


def left(result: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "id": result["id"],
        "kind": result["kind"],
        "text": result["text"],
        "reason": reason,
        "score_breakdown": result.get("score_breakdown", {}),
    }


def choose(
    results: list[dict[str, Any]],
    given: set[str],
    budget: int,
    query_terms: tuple[str, ...],
    brief: bool,
    vectors: dict[str, Any] | None = None,
    model_id: str = "",
) -> Plan:
    """The items to inject, best first, within ``budget`` characters, and why others were not.

    An excerpt is a window of a few turns; the block is filled turn by turn. Every turn of a
    relevant excerpt is a piece scored by its excerpt's priority plus ``LINE_MATCH`` times its
    own match with the prompt; typed memories are pieces of their own. One greedy pass in score
    order (summaries last): a turn already shown is skipped, a turn joins its excerpt's item
    (turns in their order, the excerpt citing only the turns it shows), and a piece is kept
    when the block still fits.
    """
    plan = Plan()
    if not results:
        plan.reason = "no candidates in this project"
        return plan
    relevant = []
    for r in results:
        if r.get("status", "active") != "active":
            continue
        if not r.get("relevant", True):
            if len(plan.left_out) < LEFT_OUT_SHOWN:
                plan.left_out.append(left(r, "below the relevance threshold"))
            continue
        if r["id"] in given:
            plan.left_out.append(left(r, "already injected in this session"))
            continue
        relevant.append(r)
    if not relevant:
        if given and any(r["id"] in given for r in results):
            plan.reason = "every relevant memory was already injected in this session"
        else:
            best = max((r["score_breakdown"].get("relevance", 0.0) for r in results), default=0.0)
            need = min((r["score_breakdown"].get("threshold", 1.0) for r in results), default=1.0)
            plan.reason = f"none relevant (best relevance {best:.2f} < {need:.2f})"
        return plan
    weights = lexical.local_weights(query_terms, (r["text"] for r in relevant))
    split = {r["id"]: excerpt_turns(r) for r in relevant if r["kind"] == "excerpt"}
    pieces = ranked_pieces(relevant, weights, split)
    pinned_total = sum(1 for r in relevant if r.get("pinned")) if brief else 0
    disagreements = Disagreements(vectors or {}, model_id)
    covered: set[str] = set()
    kept: list[Item] = []
    picked: dict[str, set[int]] = {}
    """Of each excerpt shown, the numbers of the turns it shows."""
    items: dict[str, Item] = {}
    pinned_shown = 0
    size = BlockSize()
    for r, n in pieces:
        if n is not None:  # one turn of an excerpt
            day, turns = split[r["id"]]
            assert turns is not None
            uuid = turns[n][0]
            if uuid in covered or size.now() + len(show_turns(turns, [n], weights)) + 3 > budget:
                continue  # shown already, or cannot fit (the block only grows)
            item = items.get(r["id"])
            if item is not None:  # another turn of an excerpt in the block
                grown = show_turns(turns, [*picked[r["id"]], n], weights)
                delta = size.change(item, grown)
                if size.now(overflow(pinned_total - pinned_shown)) + delta > budget:
                    continue
                item.display = grown
                item.turns = item.turns | {uuid}
                size.grow(delta)
                picked[r["id"]].add(n)
                covered.add(uuid)
                continue
            display, turns_shown = show_turns(turns, [n], weights), frozenset([uuid])
            day = day or day_of(r)
        elif r["id"] in items:
            continue
        elif r["kind"] == "excerpt":  # an older excerpt, not one line per turn: whole
            turns_shown = frozenset(source_uuids(r))
            if covered.intersection(turns_shown):
                plan.left_out.append(left(r, "its turns are already shown"))
                continue
            display, day = whole_excerpt(r), split[r["id"]][0] or day_of(r)
        else:
            turns_shown = frozenset(source_uuids(r))
            if r["kind"] != "summary" and turns_shown and turns_shown <= covered:
                plan.left_out.append(left(r, "its turns are already shown"))
                continue
            display, day = clip(r["text"]), ""
            if r["kind"] == "summary" and repeats(display, kept):
                plan.left_out.append(left(r, "repeats what the items below say"))
                continue
        section = "pinned" if r.get("pinned") and brief else r["kind"]
        item = Item(r, section, priority(r), retrieve.explain(r), display, turns_shown, day=day)
        is_pinned = brief and bool(r.get("pinned"))
        footer = overflow(pinned_total - pinned_shown - (1 if is_pinned else 0))
        fits = size.with_item(item, footer) <= budget
        marked = disagreements.mark(item, kept) if fits else []
        if marked:  # notes (and the order) changed: measure the whole block again
            fits = rendered_size(ordered([*kept, item]), footer) <= budget
        if not fits:
            disagreements.undo(marked)
            if n is None:
                plan.left_out.append(left(r, "over the budget"))
            continue
        kept.append(item)
        items[r["id"]] = item
        if marked:
            size = BlockSize.of(kept)
        else:
            size.add(item)
        if n is not None:
            picked[r["id"]] = {n}
        if is_pinned:
            pinned_shown += 1
        if r["kind"] != "summary":
            covered |= turns_shown
    for r in relevant:  # the excerpts none of whose turns were shown, and why
        if r["id"] not in items and split.get(r["id"], ("", None))[1] is not None:
            shown = set(source_uuids(r)) <= covered
            plan.left_out.append(
                left(r, "its turns are already shown" if shown else "over the budget")
            )
    plan.items = ordered(kept)
    plan.footer = overflow(pinned_total - pinned_shown)
    if plan.footer and rendered_size(plan.items, plan.footer) > budget:
        plan.footer = ""  # cannot happen unless even the footer alone is over the budget
    if not plan.items:
        plan.reason = "nothing fits in the budget"
    return plan


def overflow(more: int) -> str:
    if more <= 0:
        return ""
    noun = "memory" if more == 1 else "memories"
    return f"(+{more} more pinned {noun} not shown here: `memd list` shows them all)"


def priority(result: dict[str, Any]) -> float:
    """Fusion score, with typed memories ahead of excerpts of the same relevance."""
    base = float(result.get("score", 0.0))
    return base - (0.05 if result["kind"] == "excerpt" else 0.0)


def ranked_pieces(
    relevant: list[dict[str, Any]],
    weights: dict[str, float],
    split: dict[str, tuple[str, list[tuple[str, str]] | None]],
) -> list[tuple[dict[str, Any], int | None]]:
    """What the block is filled from, best first: (memory, turn number) for each turn of an
    excerpt that is one line per turn, (memory, None) for any other memory; summaries last
    (whether one repeats the items shown can only be told once those are chosen). ``split``:
    each excerpt's :func:`excerpt_turns`.

    A turn scores its excerpt's priority plus ``LINE_MATCH`` times the weighted share of the
    prompt's terms it carries, so the turn that says what the prompt asks comes before its
    neighbours, and a neighbour (often the question or the answer) before weaker excerpts."""
    total = sum(weights.values())
    scored: list[tuple[bool, float, int, dict[str, Any], int | None]] = []
    for order, r in enumerate(relevant):
        base = priority(r)
        turns = split[r["id"]][1] if r["id"] in split else None
        if not turns:
            # A typed memory gets the same bonus for its own match, so a decision is not
            # pushed out by raw turns that say the same (typed ones keep their edge).
            match = lexical.weighted_match(weights, r["text"]) / total if total > 0 else 0.0
            summary = r["kind"] == "summary"
            scored.append(
                (summary, -(base + (0.0 if summary else LINE_MATCH * match)), order, r, None)
            )
            continue
        for n, (_, line) in enumerate(turns):
            match = lexical.weighted_match(weights, line) / total if total > 0 else 0.0
            scored.append((False, -(base + LINE_MATCH * match), order, r, n))
    scored.sort(key=lambda x: x[:3])
    return [(r, n) for _, _, _, r, n in scored]


SECTION_ORDER = {key: n for n, (key, _) in enumerate(SECTIONS)}
SECTION_TITLES = {key: f"{title}:" for key, title in SECTIONS}


def ordered(items: list[Item]) -> list[Item]:
    """In the order the block shows them: by section, then (excerpts, under their day) in the
    order they were said, then best first. The items without a day come first in a section."""
    return sorted(
        items,
        key=lambda i: (SECTION_ORDER[i.section], i.day, said_at(i), -i.priority, i.memory["id"]),
    )


def said_at(item: Item) -> str:
    """When the first turn an excerpt shows was said ("" for an item without a day)."""
    if not item.day:
        return ""
    return min(
        (
            str(s.get("timestamp") or "")
            for s in item.memory.get("sources") or []
            if s.get("uuid") in item.turns
        ),
        default="",
    )


def repeats(summary: str, kept: list[Item]) -> bool:
    """Whether most of a summary's terms are already in the items kept."""
    mine = lexical.term_set(summary)
    if not mine:
        return True
    shown: set[str] = set()
    for item in kept:
        shown |= lexical.term_set(item.display)
    return len(mine & shown) / len(mine) >= 0.7


NEWER = "newer"
OLDER = "older: may be outdated"


class Disagreements:
    """Marks the items of one block that disagree (same subject, another value:
    :func:`similar.conflict`): the newer "newer", the older "older: may be outdated", shown
    right after the newer (in its section).

    Insert-time supersession catches the sure cases; this catches what it missed (an unsure
    contradiction, or memories written before memd could tell). Only items about to be shown
    are compared, each with those already kept: a block holds a dozen typed items, while the
    candidates were up to 50 (comparing all of them cost a hook ~3 ms).
    """

    def __init__(self, vectors: dict[str, Any], model_id: str) -> None:
        self.vectors = vectors
        self.model_id = model_id
        self.floor = similar.conflict_floor(model_id)

    def mark(self, item: Item, kept: list[Item]) -> list[tuple[Item, str, str, float]]:
        """Mark ``item`` and the kept items it disagrees with; returns what to :meth:`undo`."""
        mine = self.vectors.get(item.memory["id"])
        if mine is None or item.memory["kind"] not in SUPERSEDABLE:
            return []
        changed: list[tuple[Item, str, str, float]] = []
        for other in kept:
            theirs = self.vectors.get(other.memory["id"])
            if theirs is None or other.memory["kind"] not in SUPERSEDABLE:
                continue
            cosine = float(mine @ theirs)
            if cosine < self.floor:
                continue  # not about the same subject
            new, old = sorted((other, item), key=stamp, reverse=True)  # a tie: the better first
            if not disagree(
                new.memory["text"], old.memory["text"], round(cosine, 4), self.model_id
            ):
                continue
            for i in (item, other):
                if all(c[0] is not i for c in changed):
                    changed.append((i, i.note, i.section, i.priority))
            if new.note != OLDER:
                new.note = NEWER
            old.note = OLDER
            old.section = new.section
            old.priority = min(old.priority, new.priority - 0.001)
        return changed

    @staticmethod
    def undo(changed: list[tuple[Item, str, str, float]]) -> None:
        for item, note, section, prio in changed:
            item.note, item.section, item.priority = note, section, prio


def stamp(item: Item) -> str:
    return str(item.memory.get("updated_at") or item.memory.get("created_at") or "")


@lru_cache(maxsize=8192)
def disagree(new: str, old: str, cosine: float, model_id: str) -> bool:
    """:func:`similar.conflict`, remembered: the same pairs come up prompt after prompt."""
    return bool(similar.conflict(new, old, cosine, model_id))
