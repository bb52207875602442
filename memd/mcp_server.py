"""`memd mcp`: a stdio MCP server (the official ``mcp`` SDK), thin over the daemon's socket.

Each tool is one socket request to the running daemon (the same commands `memd search`, `add`,
`forget`, `restore`, `pin`, `show`, `list` and `status` send). `memory_forget` archives, like
`memd forget`; given a description instead of an id it forgets nothing and answers the
candidates, so the exact memory is confirmed before a second call acts. It never opens the store itself: a stopped
daemon is reported at once as a tool error saying how to start it, never waited on. The project
is the first ``file://`` root the client offers, else the server's working directory (Claude Code
starts MCP servers in the session's directory).
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memd import __version__
from memd.client import AsyncDaemonClient, DaemonClient
from memd.errors import DaemonNoReply, DaemonUnavailable, MemdError
from memd.kinds import KINDS as KIND_SPECS
from memd.kinds import listed
from memd.models import KINDS, USER_SCOPE

REQUEST_TIMEOUT = 30.0
FORGET_CANDIDATES = 5
"""A forget by description answers this many candidates, for the user to choose from."""
ROOTS_TIMEOUT = 2.0
INSTRUCTIONS = (
    "memd is the user's long-term memory of earlier Claude Code sessions: decisions, "
    "preferences, bug fixes with their causes, TODOs and facts, per project. Search it before "
    "asking the user something an earlier session may have settled."
)


def tool_error(socket_path: str, exc: MemdError) -> ToolError:
    """The client's error as the tool error the MCP client shows."""
    if isinstance(exc, DaemonNoReply):
        return ToolError(f"memd's daemon took the request but did not answer: {exc.__cause__}")
    if isinstance(exc, DaemonUnavailable):
        return ToolError(
            f"memd's daemon is not running (nothing answers at {socket_path}: "
            f"{exc.__cause__.__class__.__name__}). Start it with `memd serve`, or `memd install` "
            "for the user service."
        )
    return ToolError(str(exc))


async def project_dir(ctx: Context | None) -> str:
    """The client's first ``file://`` root, else this process's working directory."""
    if ctx is not None:
        try:
            caps = ctx.client_capabilities
            if caps is not None and caps.roots is not None:
                with anyio.fail_after(ROOTS_TIMEOUT):
                    result = await ctx.session.list_roots()
                for root in result.roots:
                    url = urlparse(str(root.uri))
                    if url.scheme == "file" and url.path:
                        return unquote(url.path)
        except Exception:  # no roots, a slow client, or no back channel (newer protocols)
            pass
    return os.getcwd()


def brief(memory: Mapping[str, Any], score: float | None = None) -> dict[str, Any]:
    """What a tool shows of one memory: id, kind, text, dates and provenance."""
    out = {
        "id": memory.get("id"),
        "kind": memory.get("kind"),
        "text": memory.get("text"),
        "project": memory.get("project"),
        "pinned": memory.get("pinned", False),
        "status": memory.get("status", "active"),
        "created_at": memory.get("created_at"),
        "updated_at": memory.get("updated_at"),
        "sources": memory.get("sources", []),
    }
    if score is not None:
        out["score"] = round(float(score), 3)
    return out


def timeline(memories: Sequence[Mapping[str, Any]], sessions: int) -> list[dict[str, Any]]:
    """Sessions, newest first, each with what was learned from it (from memories' sources)."""
    learned: dict[str, list[dict[str, Any]]] = defaultdict(list)
    span: dict[str, list[str]] = {}
    for m in memories:
        seen = set()
        for s in m.get("sources") or []:
            sid = s.get("session_id") or ""
            if not sid:
                continue
            stamps = span.setdefault(sid, [])
            if s.get("timestamp"):
                stamps.append(s["timestamp"])
            if sid not in seen:
                seen.add(sid)
                learned[sid].append({"id": m["id"], "kind": m["kind"], "text": m["text"]})

    def rank(item: dict[str, Any]) -> int:
        return KINDS.index(item["kind"]) if item["kind"] in KINDS else len(KINDS)

    rows: list[dict[str, Any]] = [
        {
            "session_id": sid,
            "started": min(span[sid], default=""),
            "ended": max(span[sid], default=""),
            "learned": sorted(items, key=rank),
        }
        for sid, items in learned.items()
    ]
    rows.sort(key=lambda r: str(r["ended"]), reverse=True)
    return rows[:sessions]


SEARCH_DOC = f"""Search memd's memories of this project (and user-wide ones) by meaning and words.

kinds: any of {listed(last="or")}.
Returns memories with ids, kinds, dates and provenance (source sessions and lines)."""
ADD_DOC = f"""Remember TEXT in this project (user_wide: in every project). Secrets are redacted.

kind: {"; ".join(f"{k.name} for {k.meaning}" for k in KIND_SPECS if k.addable)}.
pin: always in the session brief."""


def build_server(socket_path: str) -> MCPServer:
    client = DaemonClient(socket_path, timeout=REQUEST_TIMEOUT)
    daemon = AsyncDaemonClient(client, functools.partial(tool_error, socket_path))
    server: MCPServer = MCPServer(name="memd", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(description=SEARCH_DOC)
    async def memory_search(
        query: str, limit: int = 10, kinds: list[str] | None = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        for kind in kinds or []:
            if kind not in KINDS:
                raise ToolError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
        reply = await daemon.search(
            query=query,
            cwd=await project_dir(ctx),
            limit=max(1, min(int(limit), 100)),
            kinds=kinds or None,
        )
        return {"memories": [brief(r, r.get("score")) for r in reply["results"]]}

    @server.tool(description=ADD_DOC)
    async def memory_add(
        text: str,
        kind: str = "fact",
        pin: bool = False,
        user_wide: bool = False,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        reply = await daemon.add(
            text=text,
            kind=kind,
            pin=pin,
            cwd=await project_dir(ctx),
            project=USER_SCOPE if user_wide else None,
        )
        return {"action": reply["result"]["action"], "memory": brief(reply["memory"])}

    @server.tool()
    async def memory_forget(
        id: str = "", query: str = "", ctx: Context | None = None
    ) -> dict[str, Any]:
        """Forget a memory: archive it, so no session brief, prompt or search offers it again
        (the user can undo it with `memd restore ID`; nothing is deleted for good).

        id: the memory's id (any unique prefix of 4+ characters): archives it.
        query: a description instead: nothing is forgotten; the candidates come back, and you
        must show them to the user, ask which one they mean, and call again with its id.
        """
        if id.strip():
            reply = await daemon.forget(id=id.strip(), reason="forgotten through MCP")
            return {
                "forgotten": reply["forgotten"],
                "text": reply.get("text", ""),
                "status": "archived",
                "undo": f"memd restore {reply['forgotten']}",
            }
        if not query.strip():
            raise ToolError("give the id of the memory to forget, or a query to find it")
        found = await daemon.search(
            query=query, cwd=await project_dir(ctx), limit=FORGET_CANDIDATES
        )
        candidates = [brief(r, r.get("score")) for r in found["results"]]
        return {
            "forgotten": None,
            "candidates": candidates,
            "next": (
                "Nothing was forgotten. Show these to the user, ask which one to forget, "
                "then call memory_forget with that id."
                if candidates
                else "Nothing was forgotten: no memory matches. Ask the user for other words."
            ),
        }

    @server.tool()
    async def memory_restore(id: str) -> dict[str, Any]:
        """Bring back a forgotten (archived) or superseded memory ID (a prefix of 4+ characters)."""
        reply = await daemon.restore(id=id)
        return {"memory": brief(reply["memory"])}

    @server.tool()
    async def memory_pin(id: str, pinned: bool = True) -> dict[str, Any]:
        """Pin memory ID (always in the session-start brief), or unpin it with pinned=false."""
        reply = await daemon.pin(id=id, pinned=pinned)
        return {"memory": brief(reply["memory"])}

    @server.tool()
    async def memory_show(id: str) -> dict[str, Any]:
        """One memory in full: provenance (sessions, lines, times) and history (merges, edits)."""
        memory = (await daemon.show(id=id))["memory"]
        out = brief(memory)
        for key in ("topic", "keywords", "importance", "hits", "last_used_at", "history"):
            out[key] = memory.get(key)
        out["superseded_by"] = memory.get("superseded_by") or None
        out["supersedes"] = memory.get("supersedes", [])
        return out

    @server.tool()
    async def memory_timeline(sessions: int = 10, ctx: Context | None = None) -> dict[str, Any]:
        """Recent sessions of this project, newest first, with what memd learned from each."""
        reply = await daemon.list_memories(cwd=await project_dir(ctx))
        return {"sessions": timeline(reply["memories"], max(1, min(int(sessions), 100)))}

    @server.tool()
    async def memory_status() -> dict[str, Any]:
        """Whether memd's daemon runs, its version, memory counts, sessions and extractor."""
        try:
            reply = await daemon.status()
        except ToolError as exc:
            return {"running": False, "detail": str(exc)}
        keys = ("version", "pid", "uptime_seconds", "socket", "home", "memories", "sessions")
        return {
            "running": True,
            **{k: reply.get(k) for k in keys},
            "extractor": reply.get("extractor"),
        }

    return server


def run(socket_path: Path | str) -> None:
    """Serve MCP on stdin/stdout until the client closes the pipe."""
    build_server(str(socket_path)).run("stdio")
