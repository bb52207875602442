"""`memd mcp`: serve memd's MCP tools on stdin/stdout (Claude Code starts it)."""

from __future__ import annotations

import click

from memd.cli import handle_errors, settings_from


@click.command(name="mcp")
@click.pass_context
@handle_errors
def mcp_serve(ctx: click.Context) -> None:
    """Serve memd's tools over MCP on stdio (memory_search, memory_add, ...): for Claude Code.

    Register it with `memd install --mcp`; the daemon must be running (`memd serve`).
    """
    from memd.mcp_server import run

    run(settings_from(ctx).socket_path)


def register(group: click.Group) -> None:
    group.add_command(mcp_serve)
