"""The other two ways to connect memd, through the real CLI: `memd mcp` (registered with
`memd install --mcp`) and the memd plugin (plugin/), plus /remember, /recall and /forget."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from claude_harness import World, hook_contexts, request_for

pytestmark = pytest.mark.e2e

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
MEMORY = "The orders service stores invoices in PostgreSQL 16."
FACT = "Invoices live in the billing schema, in the table invoices_v2."
PROMPT = "In which schema and table are the invoices stored?"


def tool_results(world: World, tool_use_id: str) -> list[str]:
    """The text of every tool_result for ``tool_use_id`` that reached the model."""
    out = []
    for body in world.api.model_requests():
        for m in body["messages"]:
            if isinstance(m.get("content"), list):
                for block in m["content"]:
                    if block.get("type") == "tool_result" and block["tool_use_id"] == tool_use_id:
                        out.append(json.dumps(block.get("content")))
    return out


def last_user_turn(body: dict[str, Any]) -> str:
    """The JSON of the last user message of one model request (what the fake model matches)."""
    return json.dumps([m for m in body["messages"] if m.get("role") == "user"][-1])


WAIT = "WaitForMcpServers"


def call_then_answer(when: str, tool: str, args: dict[str, Any], tid: str) -> list[dict[str, Any]]:
    """The fake model's script: on ``when``, wait for the MCP server (`memd mcp` takes a few
    seconds to start and the CLI does not wait in -p mode; a real model calls this tool too),
    then call ``tool`` with ``args``, then answer."""
    wait_id = tid.replace("toolu_", "toolu_wait")
    server = "plugin:memd:memd" if tool.startswith("mcp__plugin_") else "memd"
    return [
        {"when": tid, "reply": {"text": "Here is what memd returned."}},
        {"when": wait_id, "reply": {"tool_use": {"id": tid, "name": tool, "input": args}}},
        {
            "when": when,
            "reply": {"tool_use": {"id": wait_id, "name": WAIT, "input": {"servers": [server]}}},
        },
    ]


def test_mcp_server_connected_and_searched(world: World) -> None:
    assert "registered MCP server 'memd'" in world.memd_ok("install", "--mcp")
    world.memd_ok("add", "--kind", "fact", MEMORY)
    listed = world.run_claude("mcp", "list", timeout=120)
    line = next((x for x in listed.stdout.splitlines() if x.startswith("memd:")), "")
    assert "Connected" in line, listed.stdout + listed.stderr

    prompt = "Which database holds the invoices?"
    tool = "mcp__memd__memory_search"
    world.api.script(call_then_answer(prompt, tool, {"query": "invoices database"}, "toolu_mcp_1"))
    world.session(prompt, tools=(tool, WAIT)).check()
    results = tool_results(world, "toolu_mcp_1")
    assert results and "PostgreSQL 16" in results[0], results


def test_mcp_reports_a_stopped_daemon(world: World) -> None:
    world.memd_ok("install", "--mcp")
    world.stop_daemon()
    prompt = "Search memd for the deploy steps."
    tool = "mcp__memd__memory_search"
    world.api.script(call_then_answer(prompt, tool, {"query": "deploy"}, "toolu_mcp_down"))
    world.session(prompt, tools=(tool, WAIT)).check()
    (result,) = tool_results(world, "toolu_mcp_down")
    assert "not running" in result and "memd serve" in result


def test_plugin_validates_strictly(world: World) -> None:
    out = world.run_claude("plugin", "validate", "--strict", str(PLUGIN), timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Validation passed" in out.stdout


def test_plugin_session_gets_hooks_and_tools(world: World) -> None:
    world.memd_ok("uninstall", "--hooks")
    world.memd_ok("add", "--kind", "decision", "We decided to keep invoices in PostgreSQL 16.")
    world.memd_ok("add", "--kind", "fact", FACT)
    prompt = PROMPT
    tool = "mcp__plugin_memd_memd__memory_search"
    world.api.script(call_then_answer(prompt, tool, {"query": "invoices"}, "toolu_pg_1"))
    s = world.session(prompt, tools=(tool, WAIT), extra=("--plugin-dir", str(PLUGIN))).check()
    contexts = hook_contexts(request_for(world.api.model_requests(), prompt))
    labels = {label.split(":")[0].split(" ")[0] for label, _, _ in contexts}
    assert labels == {"SessionStart", "UserPromptSubmit"}, contexts
    brief = [b for label, b, _ in contexts if label.startswith("SessionStart")]
    on_prompt = [b for label, b, _ in contexts if label.startswith("UserPromptSubmit")]
    assert "PostgreSQL 16" in brief[0] and "invoices_v2" in on_prompt[0], contexts
    results = tool_results(world, "toolu_pg_1")
    assert results and "PostgreSQL 16" in results[0], results
    # Its SessionEnd hook reached the daemon too: the session is known to memd.
    world.settle(s.session_id)
    assert any(src["session_id"] == s.session_id for m in world.memories() for src in m["sources"])


def test_plugin_and_memd_install_never_both_inject(world: World) -> None:
    # memd install --hooks already ran (the world fixture): the plugin's hooks stand down.
    world.memd_ok("add", "--kind", "decision", "We decided to keep invoices in PostgreSQL 16.")
    world.memd_ok("add", "--kind", "fact", FACT)
    prompt = PROMPT
    run = world.session(prompt, stream=True, extra=("--plugin-dir", str(PLUGIN))).check()
    contexts = hook_contexts(request_for(world.api.model_requests(), prompt))
    assert len([c for c in contexts if c[0].startswith("SessionStart")]) == 1, contexts
    assert len([c for c in contexts if c[0].startswith("UserPromptSubmit")]) == 1, contexts
    said = json.dumps([e for e in run.events if e.get("subtype") == "hook_response"])
    assert "stand down" in said


def test_remember_recall_forget_commands(world: World) -> None:
    out = world.memd_ok("install", "--mcp", "--commands")
    assert "/remember, /recall, /forget" in out
    add = "mcp__memd__memory_add"
    args = {"text": "Use pnpm, never npm", "kind": "preference", "pin": True}
    world.api.script(call_then_answer("memory_add", add, args, "toolu_remember"))
    world.session("/remember --pin Use pnpm, never npm", tools=(WAIT,)).check()
    waited = tool_results(world, "toolu_waitremember")
    (stored,) = tool_results(world, "toolu_remember")
    assert waited and "Use pnpm" in stored, (waited, stored)
    assert "Use pnpm, never npm" in stored
    (memory,) = [m for m in world.memories() if "pnpm" in m["text"]]
    assert memory["pinned"] and memory["kind"] == "preference"
    assert memory["project"] == str(world.project)

    search = "mcp__memd__memory_search"
    world.api.script(call_then_answer("memory_search", search, {"query": "pnpm"}, "toolu_recall"))
    world.session("/recall package manager", tools=(WAIT,)).check()
    (found,) = tool_results(world, "toolu_recall")
    assert memory["id"] in found

    forget = "mcp__memd__memory_forget"
    world.api.script(
        call_then_answer("memory_forget", forget, {"id": memory["id"][:8]}, "toolu_forget")
    )
    world.session(f"/forget {memory['id'][:8]}", tools=(WAIT,)).check()
    (forgotten,) = [m for m in world.memories() if "pnpm" in m["text"]]
    assert forgotten["status"] == "archived"  # forget archives; `memd restore` undoes it
    world.memd_ok("restore", memory["id"][:8])
    (back,) = [m for m in world.memories() if "pnpm" in m["text"]]
    assert back["status"] == "active"


def test_global_remember_reaches_another_project(world: World) -> None:
    world.memd_ok("install", "--mcp", "--commands")
    args = {"text": "Answer in British English.", "kind": "preference", "user_wide": True}
    world.api.script(call_then_answer("memory_add", "mcp__memd__memory_add", args, "toolu_g"))
    world.session("/remember --global Answer in British English.", tools=(WAIT,)).check()
    other = world.home / "work" / "blog"
    other.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=other, check=True)
    hits = world.request("search", query="which English spelling", cwd=str(other))["results"]
    assert any("British English" in h["text"] and h["project"] == "user:global" for h in hits)


def test_plugin_remember_then_recall_in_a_new_session(world: World) -> None:
    """The plugin's own /memd:remember and /memd:recall (plugin/commands/), not the copies
    `memd install --commands` writes: the session loads only the plugin (no installed hooks)."""
    world.memd_ok("uninstall", "--hooks")
    plugin = ("--plugin-dir", str(PLUGIN))
    add = "mcp__plugin_memd_memd__memory_add"
    args = {"text": "Use pnpm, never npm", "kind": "preference", "pin": True}
    # The rule fires only on the plugin command's own text, which names the plugin's tool.
    world.api.script(call_then_answer(add, add, args, "toolu_premember"))
    s1 = world.session("/memd:remember --pin Use pnpm, never npm", tools=(WAIT,), extra=plugin)
    s1.check()
    expanded = request_for(world.api.model_requests(), "Arguments: --pin Use pnpm, never npm")
    assert add in last_user_turn(expanded), expanded["messages"]
    (stored,) = tool_results(world, "toolu_premember")
    assert "Use pnpm, never npm" in stored, stored
    (memory,) = [m for m in world.memories() if m["text"] == "Use pnpm, never npm"]
    assert memory["pinned"] and memory["kind"] == "preference"
    assert memory["project"] == str(world.project)
    shown = world.memd_ok("show", memory["id"][:8])
    assert "Use pnpm, never npm" in shown and f"project: {world.project}" in shown, shown

    before = len(world.api.requests())
    search = "mcp__plugin_memd_memd__memory_search"
    world.api.script(call_then_answer(search, search, {"query": "pnpm"}, "toolu_precall"))
    s2 = world.session("/memd:recall package manager", tools=(WAIT,), extra=plugin).check()
    assert s2.session_id != s1.session_id
    body = request_for(world.api.model_requests(before), "query: package manager")
    assert search in last_user_turn(body), body["messages"]
    (found,) = tool_results(world, "toolu_precall")
    assert memory["id"] in found and "Use pnpm, never npm" in found, found
