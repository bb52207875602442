"""The domain's shapes: turns and segments on the way in, memories on the way out."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from memd.errors import UserError
from memd.names import JOB_NAMES as JOB_NAMES  # re-exported: defined without imports there
from memd.names import KINDS as KINDS
from memd.names import STATUSES as STATUSES
from memd.names import USER_SCOPE as USER_SCOPE


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise UserError(f"unknown kind {kind!r}; choose one of: {', '.join(KINDS)}")
    return kind


@dataclass(frozen=True)
class Source:
    """One transcript line a memory came from."""

    session_id: str = ""
    uuid: str = ""
    timestamp: str = ""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Source:
        return cls(
            session_id=str(raw.get("session_id") or ""),
            uuid=str(raw.get("uuid") or ""),
            timestamp=str(raw.get("timestamp") or ""),
        )


@dataclass
class Memory:
    """One stored memory. ``id`` is deterministic: project + sources + content."""

    text: str
    kind: str = "fact"
    project: str = USER_SCOPE
    id: str = ""
    topic: str = ""
    keywords: list[str] = field(default_factory=list)
    importance: float = 0.5
    pinned: bool = False
    status: str = "active"
    superseded_by: str = ""
    created_at: str = ""
    updated_at: str = ""
    last_used_at: str = ""
    hits: int = 0
    score: float = -1.0
    """Effective score kept by the decay job; negative means "not computed yet" (= importance)."""
    sources: list[Source] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    """Earlier texts and merges, newest last: how this memory came to be."""
    subject: str = ""
    """What the stated value belongs to, when an extractor named it ("start time of the
    nightly batch"); "" when unknown (the store then reads the subject from the text)."""
    value: str = ""
    """The value the memory states for ``subject`` ("02:30 UTC"); "" when unknown."""

    def __post_init__(self) -> None:
        self.text = self.text.strip()
        if not self.text:
            raise UserError("memory text is empty")
        check_kind(self.kind)
        if self.status not in STATUSES:
            raise UserError(f"unknown status {self.status!r}")
        self.importance = min(1.0, max(0.0, float(self.importance)))
        self.sources = [s if isinstance(s, Source) else Source.from_dict(s) for s in self.sources]
        if not self.created_at:  # (a row read back has its dates: no clock read for it)
            self.created_at = now_iso()
        self.updated_at = self.updated_at or self.created_at
        if not self.id:
            self.id = memory_id(self.project, self.kind, self.text, self.sources)
        if self.score < 0:
            self.score = self.importance

    def said_at(self) -> str:
        """When what the memory says was last said: its newest source turn's time, else when
        it was created. (``updated_at`` is when memd last changed it: a backfill learns old
        statements today.)"""
        newest = max((s.timestamp for s in self.sources if s.timestamp), default="")
        return newest or self.created_at

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Memory:
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        if isinstance(known.get("keywords"), str):
            known["keywords"] = [w.strip() for w in known["keywords"].split(",") if w.strip()]
        if isinstance(known.get("history"), str):
            known["history"] = json.loads(known["history"] or "[]")
        known["sources"] = [Source.from_dict(s) for s in known.get("sources") or []]
        return cls(**known)


def memory_id(project: str, kind: str, text: str, sources: list[Source]) -> str:
    """Deterministic id, so re-processing the same segment after a crash is idempotent."""
    h = hashlib.sha256()
    for part in (project, kind, " ".join(text.split())):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    for s in sorted({(s.session_id, s.uuid) for s in sources}):
        h.update(f"{s[0]}/{s[1]}".encode())
        h.update(b"\x00")
    return h.hexdigest()[:16]


@dataclass
class ToolCall:
    """A tool call in an assistant turn: the name, a short form of the input, the input fields
    extraction reads (``args``) and how the call ended (``result``, ``status``).

    A call whose ``name`` is empty is a result waiting for its call (``id`` is the call's
    ``tool_use_id``): :func:`memd.ingest.transcript.fold` attaches it and never stores it."""

    name: str
    summary: str = ""
    id: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    """The input fields memd reads, trimmed (:data:`memd.ingest.transcript.TOOL_ARGS`)."""
    result: str = ""
    """The start and end of the call's result text."""
    status: str = ""
    """``ok``, ``error``, ``rejected`` (the user refused it), or "" (no result seen)."""


@dataclass
class Turn:
    """One conversational turn: a user message, or one assistant response (grouped by message.id)."""

    uuid: str
    session_id: str
    role: str  # "user" | "assistant"
    text: str
    timestamp: str = ""
    cwd: str = ""
    tools: list[ToolCall] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)
    tool_outputs: list[str] = field(default_factory=list)
    """Short, tool-result text shown to the model (already trimmed; redact before storing)."""
    uuids: list[str] = field(default_factory=list)
    """Every line uuid folded into this turn (streamed assistant lines share one message.id)."""
    message_id: str = ""
    agent_id: str = ""
    is_sidechain: bool = False
    is_compact_summary: bool = False
    entrypoint: str = ""
    git_branch: str = ""

    def source(self) -> Source:
        return Source(session_id=self.session_id, uuid=self.uuid, timestamp=self.timestamp)


@dataclass
class Segment:
    """A closed piece of a session, ready for extraction. Extracted exactly once."""

    session_id: str
    project: str
    turns: list[Turn]
    index: int = 0
    reason: str = ""  # session-end | idle | compaction | size-cap | ingest
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            first = self.turns[0].uuid if self.turns else ""
            self.key = f"{self.session_id}:{self.index}:{first}"


@dataclass
class Candidate:
    """What an extractor proposes; the store embeds, dedupes and supersedes it."""

    kind: str
    text: str
    topic: str = ""
    keywords: list[str] = field(default_factory=list)
    importance: float = 0.5
    source_uuids: list[str] = field(default_factory=list)
    supersedes_hint: str = ""
    """Optional: text of an earlier statement this one replaces (the store checks it)."""
    subject: str = ""
    """Optional: what the stated value belongs to (:attr:`Memory.subject`)."""
    value: str = ""
    """Optional: the value stated for ``subject``, found in ``text``."""
    closes: list[str] = field(default_factory=list)
    """Texts of todos this candidate reports finished (a todo list's completed items)."""
    origin: str = ""
    """Where it comes from: "" (a statement), ``work`` (tool records and what the agent
    found or did), ``summary``, ``excerpt``. Not stored; for tests and benchmarks."""
