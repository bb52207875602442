"""The socket protocol: one JSON object per line in each direction.

A request is ``{"cmd": NAME, ...args}``. A reply is ``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``. Below the framing, each command's arguments and reply as a
TypedDict (``SearchRequest``, ``SearchReply``, ...): :class:`memd.client.DaemonClient` speaks
them. Standard library only.
"""

from __future__ import annotations

import json
import socket
from typing import Any, NotRequired, TypedDict

MAX_LINE = 1 << 20
"""Requests over 1 MiB are refused."""


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("a message must be a JSON object")
    return obj


def error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


class NoReply(OSError):
    """Connected to the daemon, but its reply did not come (timeout or a dropped connection)."""


def request(path: str, payload: dict[str, Any], timeout: float | None = 30.0) -> dict[str, Any]:
    """Send one request and wait for its reply (``timeout=None``: as long as it takes).

    Raises OSError when nobody listens, ``NoReply`` when the daemon took the request but did
    not answer, and ValueError when the reply is not a JSON object.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5.0 if timeout is None else timeout)
    try:
        sock.connect(path)
        sock.settimeout(timeout)
        try:
            return _exchange(sock, payload)
        except OSError as exc:
            raise NoReply(f"the daemon took the request but did not answer: {exc}") from exc
    finally:
        sock.close()


def _exchange(sock: socket.socket, payload: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(encode(payload))
    buf = bytearray()
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > 64 * MAX_LINE:
            raise ValueError("reply too large")
    if not buf:
        raise ConnectionError("daemon closed the connection without a reply")
    return decode(bytes(buf))


# ---- the shapes on the wire (DESIGN.md "Socket protocol", "Search results", "Status")
#
# ``XRequest`` is the arguments of command ``x`` (the request is ``{"cmd": "x", **arguments}``);
# an argument left out takes the daemon's default; a command without arguments has none. ``XReply`` is its ``{"ok": true, ...}`` reply.
# A reply may carry more keys than are declared: these are the ones clients read and DESIGN.md
# promises. The daemon's handlers (``Server.cmd_*``, and the ``App`` methods of ``APP_COMMANDS``)
# take exactly these arguments (``tests/test_client.py`` checks it).


class Reply(TypedDict):  # every reply: ``ok`` true, or false with ``error``
    ok: bool
    error: NotRequired[str]


class Source(TypedDict):
    """A transcript line a memory came from."""

    session_id: str
    uuid: str
    timestamp: str


class MemoryRecord(TypedDict):
    """A stored memory as the socket shows it (``Memory.to_dict()``)."""

    id: str
    text: str
    kind: str
    project: str
    topic: str
    keywords: list[str]
    importance: float
    pinned: bool
    status: str
    superseded_by: str
    created_at: str
    updated_at: str
    last_used_at: str
    hits: int
    score: float
    sources: list[Source]
    history: list[dict[str, Any]]
    subject: NotRequired[str]
    """What the stated value belongs to, as an LLM extractor named it ("" when unknown)."""
    value: NotRequired[str]


class ShownMemory(MemoryRecord):
    """``show``'s memory: what it replaced, and on request its excerpts and source turns."""

    supersedes: list[dict[str, Any]]
    superseded_by_text: NotRequired[str]
    excerpts: NotRequired[list[dict[str, Any]]]
    turns: NotRequired[list[dict[str, Any]]]
    turns_missing: NotRequired[list[dict[str, Any]]]


class SearchResult(TypedDict):
    """One result of ``search`` and ``find``."""

    id: str
    text: str
    kind: str
    project: str
    topic: str
    keywords: list[str]
    importance: float
    status: str
    score: float
    pinned: bool
    created_at: str
    updated_at: str
    hits: int
    relevant: bool
    score_breakdown: dict[str, Any]
    """e.g. ``semantic``, ``lexical``, ``recency``, ``importance``, ``total``."""
    sources: list[Source]


class MemoryBrief(TypedDict):  # a memory named in a bulk reply
    id: str
    kind: str
    project: str
    status: str
    text: str


class UpsertOutcome(TypedDict):
    """What ``add`` did: ``action`` is e.g. ``inserted``, ``merged``, ``unchanged``."""

    id: str
    action: str
    target: str
    superseded: list[str]


class JobStatus(TypedDict):
    name: str
    next_run: str | None
    last_run: str | None
    last_status: str | None
    last_result: NotRequired[dict[str, Any] | None]
    last_ok: NotRequired[str | None]
    duration_s: NotRequired[float | None]
    trigger: NotRequired[str | None]


class MemoryCounts(TypedDict):
    total: int
    by_project: dict[str, int]
    by_kind: dict[str, int]
    by_status: NotRequired[dict[str, int]]
    active: NotRequired[int]


class SessionCounts(TypedDict):
    """Segments by status, and the sessions the hooks saw lately."""

    pending: int
    extracted: int
    active_hooks: NotRequired[int]


class ExtractorStatus(TypedDict):
    backend: str
    calls: int
    tokens: int
    failures: int


# -- requests (the arguments after ``cmd``)
# One-argument requests in the functional form: a line each, not four.
StatsRequest = TypedDict("StatsRequest", {"fresh": bool}, total=False)  # noqa: UP013
ProjectsRequest = TypedDict("ProjectsRequest", {"fresh": bool}, total=False)  # noqa: UP013
ExportRequest = TypedDict("ExportRequest", {"path": str})  # noqa: UP013
JobsRunRequest = TypedDict("JobsRunRequest", {"name": str})  # noqa: UP013
SyncDisableRequest = TypedDict("SyncDisableRequest", {"project": str})  # noqa: UP013
IngestRequest = TypedDict("IngestRequest", {"paths": list[str]})  # noqa: UP013


class ContextRequest(TypedDict, total=False):
    cwd: str | None
    prompt: str | None
    event: str
    session_id: str | None


class HookRequest(TypedDict):
    event: str
    """``session-start``, ``user-prompt-submit``, ``stop`` or ``session-end``."""
    payload: NotRequired[dict[str, Any] | None]
    """Claude Code's hook JSON, as it came."""


class SearchRequest(TypedDict):
    query: str
    cwd: NotRequired[str | None]
    project: NotRequired[str | None]
    limit: NotRequired[int | None]
    kinds: NotRequired[list[str] | None]
    include_all: NotRequired[bool]
    all_projects: NotRequired[bool]
    explain: NotRequired[bool]


class FindRequest(TypedDict):
    query: str
    project: NotRequired[str | None]
    kind: NotRequired[str | None]
    status: NotRequired[str | None]
    pinned: NotRequired[bool | None]
    limit: NotRequired[int]
    kinds: NotRequired[list[str] | None]


class ListRequest(TypedDict, total=False):
    cwd: str | None
    project: str | None
    kind: str | None
    include_all: bool
    all_projects: bool
    limit: int
    offset: int
    status: str | None
    pinned: bool | None
    order: str
    kinds: list[str] | None


class ShowRequest(TypedDict):
    id: str
    excerpts: NotRequired[bool]
    turns: NotRequired[bool]


class SessionsRequest(TypedDict, total=False):
    project: str | None
    offset: int
    limit: int
    fresh: bool


class SyncEnableRequest(TypedDict):
    project: str
    scope: NotRequired[str]
    excerpts: NotRequired[bool]


class AddRequest(TypedDict):
    text: str
    cwd: NotRequired[str | None]
    project: NotRequired[str | None]
    kind: NotRequired[str]
    pin: NotRequired[bool]
    topic: NotRequired[str]
    keywords: NotRequired[list[str] | None]
    importance: NotRequired[float]


class EditRequest(TypedDict):
    id: str
    text: NotRequired[str | None]
    kind: NotRequired[str | None]
    importance: NotRequired[float | None]


class ArchiveRequest(TypedDict):
    id: str
    reason: NotRequired[str]


class ForgetRequest(TypedDict, total=False):
    """``id`` or ``ids``; ``purge`` deletes for good instead of archiving."""

    id: str | None
    ids: list[str] | None
    purge: bool
    reason: str


class PinRequest(TypedDict, total=False):
    id: str | None
    pinned: bool
    ids: list[str] | None


class RestoreRequest(TypedDict, total=False):
    """One of ``id``, ``ids``, ``project``, ``session``, ``run`` (``last``: the latest cleanup)."""

    id: str | None
    ids: list[str] | None
    project: str | None
    session: str | None
    run: str | None


class ImportRequest(TypedDict):
    path: str
    cwd: NotRequired[str | None]


# -- replies
class PingReply(Reply):
    pong: bool
    pid: int
    version: str


class StatusReply(Reply):
    running: bool
    version: str
    pid: int
    python: str
    started_at: float
    uptime_seconds: float
    socket: str
    home: str
    memories: MemoryCounts
    embedding_model: str
    sessions: SessionCounts
    jobs: list[JobStatus]
    extractor: ExtractorStatus
    requests: dict[str, int]
    injections: dict[str, Any]
    last_errors: list[dict[str, Any]]
    library_pages: dict[str, Any]
    sync: dict[str, Any]


class ContextReply(Reply):
    context: str
    chosen: list[dict[str, Any]]
    left_out: list[dict[str, Any]]
    reason: str


class HookReply(Reply):
    context: str


class SearchReply(Reply):
    results: list[SearchResult]
    project: str | None
    """The project searched (None: every project)."""
    elsewhere: NotRequired[list[dict[str, Any]]]
    """With no result here: the projects that do have matches."""
    missed: NotRequired[list[dict[str, Any]]]
    """With ``explain`` and no result: the nearest candidates that missed."""


class FindReply(Reply):
    results: list[SearchResult]


class ListReply(Reply):
    memories: list[MemoryRecord]
    total: int
    elsewhere: NotRequired[int]
    """With an empty page of a project: how many match in other projects."""


class ShowReply(Reply):
    memory: ShownMemory


class StatsReply(Reply):
    memories: MemoryCounts
    table: dict[str, Any]
    stats: dict[str, Any]


class SessionsReply(Reply):
    sessions: list[dict[str, Any]]
    total: int


class ProjectsReply(Reply):
    projects: list[str]


class ExportReply(Reply):
    dir: str
    projects: int
    memories: int


class JobsReply(Reply):
    jobs: list[JobStatus]
    scheduled: bool
    via: str
    """``daemon`` or ``local``."""


class JobsRunReply(Reply):
    name: str
    last_status: str
    last_run: NotRequired[str]
    last_result: NotRequired[dict[str, Any]]
    last_ok: NotRequired[str | None]
    duration_s: NotRequired[float]
    trigger: NotRequired[str]


class SyncEnableReply(Reply):
    enabled: dict[str, Any]
    sync_uri: str


class SyncDisableReply(Reply):
    disabled: str


class SyncStatusReply(Reply):
    sync: dict[str, Any]


class SyncNowReply(Reply):
    round: dict[str, Any]


class AddReply(Reply):
    memory: MemoryRecord
    result: UpsertOutcome


class MemoryReply(Reply):
    """``edit``, ``archive``: the memory as it is now."""

    memory: MemoryRecord


class ForgetReply(Reply):
    """With ``id``: ``forgotten`` is its id, with ``text`` (and the archived ``memory``); with
    ``ids``: the lists ``forgotten`` and ``already``, and ``memories`` in brief."""

    forgotten: str | list[str]
    purged: bool
    text: NotRequired[str]
    memory: NotRequired[MemoryRecord]
    memories: NotRequired[list[MemoryBrief]]
    already: NotRequired[list[str]]


class PinReply(Reply):
    """With ``id``: the ``memory``; with ``ids``: ``pinned`` and the ``ids`` changed."""

    memory: NotRequired[MemoryRecord]
    pinned: NotRequired[bool]
    ids: NotRequired[list[str]]


class RestoreReply(Reply):
    """With ``id``: the ``memory``; else the lists ``restored`` and ``already``."""

    memory: NotRequired[MemoryRecord]
    restored: NotRequired[list[str]]
    memories: NotRequired[list[MemoryBrief]]
    already: NotRequired[list[str]]


class ImportReply(Reply):
    kind: str
    read: int
    added: int
    updated: int
    unchanged: int
    skipped: int
    errors: list[Any]
    restored_from_index: NotRequired[int]
    bulk: NotRequired[Any]


class ReindexReply(Reply):
    reindexed: int
    model: str


class IngestReply(Reply):
    """What ``memd ingest`` read and extracted; ``via``: ``daemon`` or ``local``."""

    files: int
    bytes: int
    sessions: int
    turns: int
    duplicates: int
    bad_lines: int
    segments_extracted: int
    memories_added: int
    extraction_failures: int
    pending: int
    seconds: float
    via: str
