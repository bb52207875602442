"""From a closed segment to stored memories: redact → extract → embed, dedupe, supersede → store
→ close the TODOs the new memories say are done → archive what the user asked to forget.

A segment is marked extracted only after its memories are durably stored, and memory ids are
deterministic, so a crash anywhere in between re-processes the segment without duplicates.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memd.errors import BudgetExceeded, ExtractionError
from memd.extract import forget_requests
from memd.extract.forget_requests import ForgetRequest
from memd.models import Candidate, Memory, Segment, Source, Turn, now_iso
from memd.store import forget_said
from memd.store.todos import close_done_by
from memd.store.upsert import UpsertResult, upsert

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.extract.base import Extractor
    from memd.settings import Settings
    from memd.state import State

log = logging.getLogger(__name__)

FORGET_REQUESTS_KEY = "forget_requests"
"""The state key of the forget requests read so far (what they name, never the fact)."""
MAX_FORGET_REQUESTS = 1000


def candidate_memories(segment: Segment, candidates: list[Candidate]) -> list[Memory]:
    """Memories with provenance: every source uuid is mapped back to its turn."""
    by_uuid: dict[str, Turn] = {}
    for turn in segment.turns:
        for uuid in [turn.uuid, *turn.uuids]:
            by_uuid.setdefault(uuid, turn)
    memories = []
    learned = now_iso()
    for c in candidates:
        turns = [by_uuid[u] for u in c.source_uuids if u in by_uuid]
        if not turns:
            log.debug("candidate without known sources dropped: %.60s", c.text)
            continue
        sources = [Source(t.session_id, t.uuid, t.timestamp) for t in turns]
        try:
            memories.append(
                Memory(
                    text=c.text,
                    kind=c.kind,
                    project=segment.project,
                    topic=c.topic,
                    keywords=list(c.keywords),
                    importance=c.importance,
                    sources=list(dict.fromkeys(sources)),
                    created_at=turns[0].timestamp or learned,
                    updated_at=learned,  # learned now: decay counts from here
                    subject=c.subject,
                    value=c.value,
                    # what the extractor says it replaces: checked by the store, now and when
                    # an older session is read later (memd.store.upsert.named_by)
                    history=[{"at": learned, "supersedes": c.supersedes_hint}]
                    if c.supersedes_hint
                    else [],
                )
            )
        except Exception as exc:  # one bad candidate never loses the others
            log.warning("candidate skipped: %s", exc)
    return memories


class Pipeline:
    """Extracts pending segments and stores their memories. Runs in the writer's thread."""

    def __init__(
        self, app: App, state: State, settings: Settings, extractor: Extractor | None = None
    ) -> None:
        from memd.extract import get_extractor

        self.app = app
        self.state = state
        self.settings = settings
        self.extractor = extractor or get_extractor(settings, state)
        self._fallback: Extractor | None = None
        self.stats: dict[str, Any] = {
            "segments": 0,
            "memories": 0,
            "failures": 0,
            "fallbacks": 0,
            "last_error": "",
            "last_lag_seconds": None,
            "todos_closed": 0,
            "forgotten": 0,
        }

    def fallback(self) -> Extractor:
        if self._fallback is None:
            from memd.extract.heuristic import HeuristicExtractor

            self._fallback = HeuristicExtractor(extra_patterns=tuple(self.settings.redact_patterns))
        return self._fallback

    def extract(self, segment: Segment) -> list[Candidate]:
        try:
            return self.extractor.extract(segment)
        except BudgetExceeded as exc:
            log.warning("LLM budget spent (%s); using the heuristic extractor", exc)
            self.stats["fallbacks"] += 1
            return self.fallback().extract(segment)

    def process(self, segment: Segment) -> list[UpsertResult]:
        """One segment: redact, extract, store, then mark it extracted (in that order)."""
        from memd.extract.redact import redact_turn

        patterns = self.settings.redact_patterns
        clean = replace(segment, turns=[redact_turn(t, patterns) for t in segment.turns])
        requests = forget_requests.requests_in(clean)
        if requests:  # the requests themselves are not stored
            clean = forget_requests.without_requests(clean, requests)
        memories = candidate_memories(clean, self.extract(clean))
        results: list[UpsertResult] = []
        for start in range(0, len(memories), 256):
            results += upsert(self.app.store, memories[start : start + 256])
        self.close_todos(memories)
        self.honour(clean.project, requests, [r.target for r in results])
        self.state.mark_extracted(segment.key)
        self.stats["segments"] += 1
        self.stats["memories"] += sum(r.action == "inserted" for r in results)
        return results

    def close_todos(self, memories: list[Memory]) -> None:
        """Close the TODOs that this segment's memories say are done, right away: a TODO done
        in a later session is then never offered as open (the cleanup job sweeps too).

        All of the segment's memories are passed, not only the inserted ones: after a crash
        between the store and this step, the replay finds them unchanged and still closes."""
        try:
            closed = close_done_by(self.app.store, self.settings, memories)
        except Exception as exc:  # the memories are stored; the cleanup job retries this
            log.warning("closing done TODOs failed: %s", exc)
            return
        self.stats["todos_closed"] += len(closed)

    def honour(self, project: str, requests: list[ForgetRequest], stored: list[str]) -> None:
        """Archive what the segment's forget requests name, stored now or earlier, and what
        the requests of sessions read before this one name among its memories (``stored``):
        a fact read after the request to forget it stays forgotten. Runs before the segment is
        marked extracted, so a crash replays it too."""
        store, home = self.app.store, self.settings.home
        kept: list[dict[str, Any]] = self.state.get(FORGET_REQUESTS_KEY) or []
        earlier = [forget_said.from_record(r) for r in kept if r.get("project") == project]
        archived = forget_said.honour(store, home, project, earlier, stored) if earlier else []
        if requests:
            archived += forget_said.honour(store, home, project, requests)
            new = [forget_said.record(project, r) for r in requests if r.timestamp]
            fresh = [r for r in new if r not in kept]
            if fresh:
                self.state.set(FORGET_REQUESTS_KEY, (kept + fresh)[-MAX_FORGET_REQUESTS:])
        self.stats["forgotten"] += len(archived)

    def process_pending(self, limit: int = 10) -> int:
        """Process up to ``limit`` pending segments; a failure leaves that one pending."""
        done = 0
        for segment in self.state.pending_segments(limit):
            started = time.monotonic()
            try:
                self.process(segment)
            except ExtractionError as exc:
                self._failed(segment, exc)
                continue
            except Exception as exc:  # never let one segment block the others
                log.exception("segment %s failed", segment.key)
                self._failed(segment, exc)
                continue
            self.stats["last_lag_seconds"] = round(time.monotonic() - started, 3)
            done += 1
        return done

    def _failed(self, segment: Segment, exc: Exception) -> None:
        self.stats["failures"] += 1
        self.stats["last_error"] = f"{segment.key}: {exc}"
        self.state.mark_failed(segment.key, str(exc))
