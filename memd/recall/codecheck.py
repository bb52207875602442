"""Whether what a memory says about the code still holds: its references
(:mod:`memd.recall.references`) checked against the working tree of the prompt's directory.

A reference still in place is seen (the day and the fingerprint of its definition are kept in
the state database, the first time as its baseline); one that moved is shown with its new place;
one that is gone marks the memory as possibly outdated, with the day it was last seen; a
definition that differs from its baseline says so. Nothing is archived for it. Only what memd
has seen (or an edit record, or git's history, says existed) can be reported gone: a name
mentioned in passing is never flagged.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memd.models import USER_SCOPE
from memd.project import resolve_project
from memd.recall.hits import Hit
from memd.recall.references import Reference, is_hub, references
from memd.recall.worktree import OutOfTime, WorkTree, extension

if TYPE_CHECKING:
    from memd.state import State

log = logging.getLogger(__name__)

STATE_PREFIX = "coderef:"
MAX_CHECKED = 12
"""At most this many candidates of one block are checked."""
SEARCH_BUDGET_SECONDS = 0.25
"""What one block's searches (git, or a walk without it) may take in all: a search not done
in time gives no mark, and is tried again on a later prompt."""
MAX_SIGHTINGS = 4096
MOVED, GONE, CHANGED = "moved", "gone", "changed"
DOC_EXTENSIONS = frozenset({"md", "rst", "txt", "html", "ipynb"})


@dataclass(frozen=True)
class Finding:
    """What became of one reference: ``state`` is "moved" (``now`` is where it is), "gone"
    (``since``: the day it was last seen) or "changed" (``since``: the day of the definition
    it differs from; a moved one that also changed has it too)."""

    state: str
    ref: Reference
    now: str = ""
    since: str = ""

    def text(self) -> str:
        ref, since = self.ref, f" (last seen {self.since})" if self.since else ""
        changed = "changed" if self.since in ("", "-") else f"changed since {self.since}"
        if self.state == MOVED:
            what = f"`{ref.symbol}` now in" if ref.symbol else "now"
            return f"moved: {what} `{self.now}`" + (f", {changed}" if self.since else "")
        if self.state == CHANGED:
            return f"`{ref.symbol}` {changed}"
        if ref.symbol and ref.path:
            gone = f"`{ref.symbol}` no longer in `{ref.path}`"
        elif ref.symbol:
            gone = f"`{ref.symbol}` no longer defined"
        else:
            gone = f"`{ref.path}` no longer exists"
        return f"may be outdated: {gone}{since}"


def mark(findings: list[Finding]) -> str:
    """The block's mark for a memory's findings ("" when all is in place)."""
    return "; ".join(f.text() for f in findings[:2])


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def is_doc(path: str) -> bool:
    """A file that shows code without defining it (a README's example is not a new home)."""
    return is_hub(path) or extension(path) in DOC_EXTENSIONS


def best_place(places: list[str], old: str) -> str:
    """Of the files now defining a name, the likeliest home: not a test, closest to ``old``."""

    def rank(path: str) -> tuple[bool, int, int, str]:
        test = "test" in path.lower()
        shared = 0
        for a, b in zip(path.split("/"), old.split("/"), strict=False):
            if a != b:
                break
            shared += 1
        return (test, -shared, len(path), path)

    return min(places, key=rank)


class Sightings:
    """Per memory, what each reference looked like when last seen: ``{ref key: {"fp", "first",
    "seen", "at"}}`` (fingerprint, day of the baseline, day last seen, file it was in); kept
    in memory, persisted in the state database by :meth:`persist`."""

    def __init__(self, state: State | None = None) -> None:
        self.state = state
        self._memories: OrderedDict[str, dict[str, dict[str, str]]] = OrderedDict()
        self._dirty: set[str] = set()
        self._lock = threading.Lock()

    @property
    def dirty(self) -> bool:
        return bool(self._dirty)

    def of(self, memory_id: str) -> dict[str, dict[str, str]]:
        with self._lock:
            known = self._memories.get(memory_id)
        if known is None:
            known = self._load(memory_id)
            with self._lock:
                known = self._memories.setdefault(memory_id, known)
                if len(self._memories) > MAX_SIGHTINGS:  # the oldest already saved go
                    saved = [m for m in self._memories if m not in self._dirty]
                    for old in saved[: len(self._memories) - MAX_SIGHTINGS]:
                        del self._memories[old]
        return known

    def _load(self, memory_id: str) -> dict[str, dict[str, str]]:
        if self.state is None:
            return {}
        try:
            raw = self.state.get(STATE_PREFIX + memory_id) or {}
            return {str(k): dict(v) for k, v in raw.items() if isinstance(v, dict)}
        except Exception as exc:  # best effort: never fail a hook for it
            log.warning("cannot read the code references of %s: %s", memory_id, exc)
            return {}

    def saw(self, memory_id: str, ref: Reference, fp: str, at: str, day: str) -> None:
        """``ref`` was seen in ``at`` on ``day`` defined as ``fp`` (a baseline if new)."""
        known = self.of(memory_id)
        with self._lock:
            old = known.get(ref.key)
            if old is None:
                known[ref.key] = {"fp": fp, "first": day, "seen": day, "at": at}
            elif old.get("seen") != day or (at and old.get("at") != at):
                old["seen"], old["at"] = day, at or old.get("at", "")
            else:
                return
            self._dirty.add(memory_id)

    def persist(self) -> None:
        if self.state is None:
            return
        with self._lock:
            dirty = [
                (m, {k: dict(v) for k, v in self._memories.get(m, {}).items()}) for m in self._dirty
            ]
            self._dirty.clear()
        for memory_id, known in dirty:
            try:
                self.state.set(STATE_PREFIX + memory_id, known)
            except Exception as exc:
                log.warning("cannot save the code references of %s: %s", memory_id, exc)
                with self._lock:
                    self._dirty.add(memory_id)  # the next flush tries again


class CodeCheck:
    """Checks the references of a block's candidates against the prompt's working tree."""

    def __init__(self, state: State | None = None, tree: WorkTree | None = None) -> None:
        self.tree = tree or WorkTree()
        self.sightings = Sightings(state)
        self.checks = 0
        self.flags = 0

    def marker(self, cwd: str | None) -> Callable[[Hit], str]:
        """For one block, what to mark on a candidate about to be shown: "" when its
        references are in place (or it has none), else what became of them. At most
        :data:`MAX_CHECKED` candidates of a block are checked; past
        :data:`SEARCH_BUDGET_SECONDS`, searches give up. Never raises."""
        if not cwd or not os.path.isabs(cwd) or not os.path.isdir(cwd):
            return lambda result: ""  # no working tree here to tell what became of the code
        project = resolve_project(cwd)
        started = time.monotonic()
        checked = 0
        root = ""

        def code(result: Hit) -> str:
            nonlocal checked, root
            if checked >= MAX_CHECKED or result.project == USER_SCOPE:
                return ""  # a user-wide memory is about the user, not this project's code
            try:
                refs = references(result.text, result.kind, project)
                if not refs:
                    return ""
                checked += 1
                root = root or work_tree(cwd) or project
                until = started + SEARCH_BUDGET_SECONDS
                return mark(self.check(result.id, refs, root, day_of(result), until=until))
            except Exception as exc:  # never fail a hook for it
                log.warning("cannot check the code references of %s: %s", result.id, exc)
                return ""

        return code

    def check(
        self,
        memory_id: str,
        refs: tuple[Reference, ...],
        root: str,
        said: str = "",
        *,
        until: float | None = None,
        day: str = "",
    ) -> list[Finding]:
        """What became of ``refs`` (of the memory ``memory_id``, said on day ``said``) in the
        working tree at ``root``; ``day``: today; ``until``: when searches give up (a
        ``time.monotonic()``). Sightings are recorded as a side effect."""
        day = day or today()
        known = self.sightings.of(memory_id)
        out = []
        for ref in refs:
            self.checks += 1
            try:
                finding = self.one(memory_id, ref, root, known.get(ref.key), said, day, until)
            except OutOfTime:
                continue  # no answer in time: a later prompt asks again
            if finding is not None:
                self.flags += 1
                out.append(finding)
        return out

    def one(
        self,
        memory_id: str,
        ref: Reference,
        root: str,
        seen: dict[str, str] | None,
        said: str,
        day: str,
        until: float | None,
    ) -> Finding | None:
        tree = self.tree
        last = (seen or {}).get("seen") or said
        if not ref.symbol:  # the file itself
            if tree.exists(root, ref.path):
                self.sightings.saw(memory_id, ref, "", ref.path, day)
                return None
            moved = (seen or {}).get("at", "")
            if moved and moved != ref.path and tree.exists(root, moved):
                self.sightings.saw(memory_id, ref, "", moved, day)
                return Finding(MOVED, ref, now=moved)  # where it was found last time
            state, new, removed = tree.fate(root, ref.path, seen is not None, until)
            if state == "renamed" and tree.exists(root, new):
                if seen is not None:
                    self.sightings.saw(memory_id, ref, "", new, day)
                return Finding(MOVED, ref, now=new)
            if seen is not None or state:
                return Finding(GONE, ref, since=last if seen is not None else removed)
            return None
        base = (seen or {}).get("fp", "")
        place = (seen or {}).get("at") or ref.path
        for at in dict.fromkeys(p for p in (ref.path, place) if p):
            fp = tree.definition(root, at, ref.symbol)
            if fp:  # where the memory says, or where it was last seen
                self.sightings.saw(memory_id, ref, fp, at, day)
                changed = (seen or {}).get("first", "-") if base and base != fp else ""
                if ref.path and at != ref.path:
                    return Finding(MOVED, ref, now=at, since=changed)
                return Finding(CHANGED, ref, since=changed) if changed else None
        # An edit record's name (a keyword argument, say) that the file still uses is not
        # gone, only not defined the way memd reads definitions.
        known = seen is not None or (ref.recorded and not tree.mentions(root, ref.path, ref.symbol))
        if ref.path and not known:
            return None  # unverified: never seen where the memory says it is
        # A name not seen yet is looked for again only once the repository changed.
        places = [p for p in tree.definers(root, ref.symbol, known, until) if not is_doc(p)]
        if not known:  # a name alone, seen for the first time: its baseline
            if places:
                at = best_place(places, "")
                fp = tree.definition(root, at, ref.symbol) or ""
                self.sightings.saw(memory_id, ref, fp, at, day)
            return None
        if places:
            now = best_place(places, place)
            fp = tree.definition(root, now, ref.symbol) or ""
            self.sightings.saw(memory_id, ref, fp, now, day)
            # A name said without its file is as true in its new file.
            return Finding(MOVED, ref, now=now) if ref.path else None
        return Finding(GONE, ref, since=last)


def work_tree(cwd: str) -> str:
    """The root of the work tree holding ``cwd`` (an agent's worktree is its own: its files
    are what that agent sees), "" when there is none."""
    probe = os.path.realpath(os.path.expanduser(cwd))
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return ""
        probe = parent


def day_of(result: Hit) -> str:
    """The day the memory was said (its newest source turn), else stored."""
    return result.said_at()[:10]
