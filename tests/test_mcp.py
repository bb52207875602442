"""`memd mcp`: the real stdio server process, driven by the official MCP client, over a real daemon."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from daemon_process import MEMD, DaemonProcess, daemon_env, remove_socket_dir, short_socket_path
from mcp import Client, StdioServerParameters

from memd.mcp_server import timeline

TOOLS = {
    "memory_search",
    "memory_add",
    "memory_forget",
    "memory_restore",
    "memory_pin",
    "memory_show",
    "memory_timeline",
    "memory_status",
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("mcp")
    sock = short_socket_path()
    proc = DaemonProcess(daemon_env(root, sock), root / "daemon.log").start()
    for project in ("shop", "blog"):
        path = root / project
        path.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    proc.root = root  # type: ignore[attr-defined]
    yield proc
    proc.stop()
    remove_socket_dir(sock)


def call(
    env: dict[str, str],
    cwd: Path,
    steps: list[tuple[str, dict[str, Any]]],
    roots: Path | None = None,
) -> list[mcp_types.CallToolResult]:
    """Start `memd mcp` in ``cwd`` and call the tools in order."""

    async def list_roots(_ctx: Any) -> mcp_types.ListRootsResult:
        assert roots is not None
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=roots.as_uri(), name="p")])

    async def main() -> list[mcp_types.CallToolResult]:
        params = StdioServerParameters(command=MEMD, args=["mcp"], env=env, cwd=str(cwd))
        async with Client(
            params,
            list_roots_callback=list_roots if roots else None,
            mode="legacy" if roots else "auto",
            read_timeout_seconds=60,
        ) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == TOOLS
            return [await client.call_tool(name, args) for name, args in steps]

    return anyio.run(main)


def data(result: mcp_types.CallToolResult) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def test_add_search_show_pin_forget(daemon: DaemonProcess) -> None:
    shop = daemon.root / "shop"  # type: ignore[attr-defined]
    blog = daemon.root / "blog"  # type: ignore[attr-defined]
    added, found, other = call(
        daemon.env,
        shop,
        [
            ("memory_add", {"text": "Use pnpm, never npm, in the shop.", "kind": "preference"}),
            ("memory_search", {"query": "pnpm or npm in the shop", "limit": 5}),
            ("memory_search", {"query": "package manager", "kinds": ["decision"]}),
        ],
    )
    memory = data(added)["memory"]
    assert memory["kind"] == "preference" and memory["project"] == str(shop.resolve())
    hits = data(found)["memories"]
    assert hits[0]["id"] == memory["id"] and "pnpm" in hits[0]["text"]
    assert {"created_at", "sources", "score"} <= set(hits[0])
    assert data(other)["memories"] == []
    # Another project does not see it.
    (elsewhere,) = call(daemon.env, blog, [("memory_search", {"query": "pnpm npm"})])
    assert all("pnpm" not in m["text"] for m in data(elsewhere)["memories"])

    shown, pinned, forgotten, archived, again = call(
        daemon.env,
        shop,
        [
            ("memory_show", {"id": memory["id"][:8]}),
            ("memory_pin", {"id": memory["id"]}),
            ("memory_forget", {"id": memory["id"]}),
            ("memory_show", {"id": memory["id"]}),
            ("memory_search", {"query": "pnpm or npm in the shop", "limit": 5}),
        ],
    )
    assert data(shown)["id"] == memory["id"] and "history" in data(shown)
    assert data(pinned)["memory"]["pinned"] is True
    assert data(forgotten)["forgotten"] == memory["id"]
    assert data(forgotten)["undo"] == f"memd restore {memory['id']}"
    assert data(archived)["status"] == "archived"  # forget archives: it is still there
    assert memory["id"] not in [m["id"] for m in data(again)["memories"]]
    # `memd restore` (the CLI) undoes an MCP forget.
    restored = daemon.memd("restore", memory["id"][:8])
    assert restored.returncode == 0, restored.stderr
    (found,) = call(daemon.env, shop, [("memory_search", {"query": "pnpm or npm in the shop"})])
    assert data(found)["memories"][0]["id"] == memory["id"]


def test_forget_by_description_asks_first_then_forgets_the_chosen_id(
    daemon: DaemonProcess,
) -> None:
    shop = daemon.root / "shop"  # type: ignore[attr-defined]
    texts = ["The staging database is on port 5433.", "The staging cache is Redis on 6380."]
    added = call(daemon.env, shop, [("memory_add", {"text": t}) for t in texts])
    ids = [data(r)["memory"]["id"] for r in added]
    asked, listed = call(
        daemon.env,
        shop,
        [
            ("memory_forget", {"query": "staging database port"}),
            ("memory_search", {"query": "staging database port"}),
        ],
    )
    answer = data(asked)
    assert answer["forgotten"] is None and "ask which one" in answer["next"]
    assert answer["candidates"][0]["id"] == ids[0]
    assert ids[0] in [m["id"] for m in data(listed)["memories"]]  # nothing was forgotten
    chosen, shown, restored, none, blank = call(
        daemon.env,
        shop,
        [
            ("memory_forget", {"id": answer["candidates"][0]["id"]}),
            ("memory_show", {"id": ids[0]}),
            ("memory_restore", {"id": ids[0]}),
            ("memory_forget", {"query": "zebra migration flight times"}),
            ("memory_forget", {}),
        ],
    )
    assert data(chosen)["forgotten"] == ids[0]
    assert data(shown)["status"] == "archived"
    assert data(restored)["memory"]["status"] == "active"
    assert data(none)["candidates"] == [] and data(none)["forgotten"] is None
    assert blank.is_error and "give the id" in blank.content[0].text  # type: ignore[union-attr]


def test_project_comes_from_the_client_roots(daemon: DaemonProcess) -> None:
    shop = daemon.root / "shop"  # type: ignore[attr-defined]
    blog = daemon.root / "blog"  # type: ignore[attr-defined]
    (added,) = call(
        daemon.env,
        shop,
        [("memory_add", {"text": "Blog posts are written in Markdown.", "kind": "fact"})],
        roots=blog,
    )
    assert data(added)["memory"]["project"] == str(blog.resolve())


def test_user_wide_memory_and_bad_input(daemon: DaemonProcess) -> None:
    shop = daemon.root / "shop"  # type: ignore[attr-defined]
    added, bad_kind, bad_search, empty = call(
        daemon.env,
        shop,
        [
            ("memory_add", {"text": "Answer briefly.", "kind": "preference", "user_wide": True}),
            ("memory_add", {"text": "x", "kind": "nonsense"}),
            ("memory_search", {"query": "x", "kinds": ["nonsense"]}),
            ("memory_search", {"query": "   "}),
        ],
    )
    assert data(added)["memory"]["project"] == "user:global"
    for result in (bad_kind, bad_search, empty):
        assert result.is_error
    assert "nonsense" in bad_kind.content[0].text  # type: ignore[union-attr]
    assert "empty" in empty.content[0].text  # type: ignore[union-attr]


def test_status_and_timeline(daemon: DaemonProcess) -> None:
    shop = daemon.root / "shop"  # type: ignore[attr-defined]
    status, tl = call(daemon.env, shop, [("memory_status", {}), ("memory_timeline", {})])
    assert data(status)["running"] is True and data(status)["pid"] == daemon.proc.pid  # type: ignore[union-attr]
    assert data(tl) == {"sessions": []}  # memories added by hand have no session


def test_timeline_groups_memories_by_session() -> None:
    def mem(id: str, kind: str, *sources: tuple[str, str]) -> dict[str, Any]:
        return {
            "id": id,
            "kind": kind,
            "text": f"text {id}",
            "sources": [{"session_id": s, "uuid": "u", "timestamp": t} for s, t in sources],
        }

    rows = timeline(
        [
            mem("a", "fact", ("s1", "2026-01-01T10:00:00Z")),
            mem("b", "decision", ("s1", "2026-01-01T10:05:00Z"), ("s2", "2026-01-02T09:00:00Z")),
            mem("c", "todo", ("s2", "2026-01-02T09:30:00Z")),
            mem("d", "fact"),
        ],
        sessions=10,
    )
    assert [r["session_id"] for r in rows] == ["s2", "s1"]
    assert (
        rows[1]["started"] == "2026-01-01T10:00:00Z" and rows[1]["ended"] == "2026-01-01T10:05:00Z"
    )
    assert [x["id"] for x in rows[1]["learned"]] == ["b", "a"]  # decisions before facts
    assert timeline([mem("a", "fact", ("s1", "t"))], sessions=1)[0]["learned"][0]["id"] == "a"


def test_stopped_daemon_is_reported_at_once(tmp_path: Path) -> None:
    env = daemon_env(tmp_path, str(tmp_path / "nobody.sock"))
    (tmp_path / "p").mkdir()
    started = time.monotonic()
    search, status = call(
        env, tmp_path / "p", [("memory_search", {"query": "anything"}), ("memory_status", {})]
    )
    assert search.is_error
    text = search.content[0].text  # type: ignore[union-attr]
    assert "not running" in text and "memd serve" in text
    assert data(status)["running"] is False
    assert time.monotonic() - started < 30
