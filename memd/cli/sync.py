"""`memd sync now|status|enable|disable`: sharing memories across machines (memd.sync.engine)."""

from __future__ import annotations

import json
from typing import Any

import click

from memd.cli import client_from, handle_errors


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def project_path(value: str) -> str:
    from memd.cli.memories import project_dir

    return str(project_dir(value))


@click.group(name="sync")
def sync_group() -> None:
    """Share memories across machines through S3-compatible object storage (sync_uri)."""


@sync_group.command(name="enable")
@click.option(
    "--project", required=True, help="Project dir, or 'user:global' (your preferences, `me` only)."
)
@click.option("--scope", type=click.Choice(["me", "team"]), default="me", show_default=True)
@click.option(
    "--excerpts", is_flag=True, help="Also share raw excerpts in team scope (off by default)."
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def sync_enable(
    ctx: click.Context, project: str, scope: str, excerpts: bool, as_json: bool
) -> None:
    """Sync a project: `me` (all my machines) or `team` (everyone with access to the bucket)."""
    reply = client_from(ctx).sync_enable(
        project=project_path(project),
        scope=scope,
        excerpts=excerpts,
    )
    if as_json:
        echo_json(reply)
        return
    got = reply["enabled"]
    click.echo(f"syncing {got['path']} as {got['portable']} in {got['scope']} scope")
    if got.get("warning"):
        click.echo(f"note: {got['warning']}")
    if not reply.get("sync_uri"):
        click.echo(
            "note: sync_uri is not set (MEMD_SYNC_URI=s3://bucket/prefix): nothing syncs yet"
        )


@sync_group.command(name="disable")
@click.option("--project", required=True, type=click.Path(file_okay=False))
@click.pass_context
@handle_errors
def sync_disable(ctx: click.Context, project: str) -> None:
    """Stop syncing a project (memories already shared stay in the bucket)."""
    reply = client_from(ctx).sync_disable(project=project_path(project))
    click.echo(f"no longer syncing {reply['disabled']}")


@sync_group.command(name="now")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def sync_now(ctx: click.Context, as_json: bool) -> None:
    """Run one sync round now and wait for it; exit 1 when it fails."""
    reply = client_from(ctx).sync_now()
    result = reply["round"]
    if as_json:
        echo_json(result)
        return
    if result.get("skipped"):
        click.echo(f"sync: {result['skipped']}")
        return
    click.echo(
        f"sync: pulled {result.get('pulled', 0)} rows from {result.get('devices', 0)} device "
        f"table(s), applied {result.get('applied', 0)}, deleted {result.get('deleted', 0)}, "
        f"pushed {result.get('pushed', 0)} in {result.get('took_s', 0):.2f} s"
    )


@sync_group.command(name="status")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def sync_status(ctx: click.Context, as_json: bool) -> None:
    """What syncs where, and how the last round went (never touches the network)."""
    status = client_from(ctx).sync_status()["sync"]
    if as_json:
        echo_json(status)
        return
    click.echo("\n".join(human(status)))


def human(s: dict[str, Any]) -> list[str]:
    lines = [
        f"sync:       {s.get('uri') or 'off (sync_uri is not set)'}",
        f"device:     {s.get('device_id')} (user {s.get('user')})",
    ]
    projects = s.get("projects") or []
    if not projects:
        lines.append("projects:   none (`memd sync enable --project DIR --scope me|team`)")
    for p in projects:
        extra = ", with excerpts" if p.get("excerpts") else ""
        where = f"{s.get('uri')}/{p['area']}" if s.get("uri") else p["area"]
        lines.append(f"  {p['path']} -> {where} ({p['scope']}{extra}) as {p['portable']}")
    last = s.get("last_round")
    if last:
        state = "ok" if last.get("ok") else f"FAILED: {last.get('error')}"
        lines.append(f"last round: {last.get('at')} {state}")
        if s.get("hint"):
            lines.append(f"fix:        {s['hint']}")
        if s.get("next_attempt"):
            lines.append(f"next try:   {s['next_attempt']} ({s.get('failures')} failure(s))")
    return lines


def register(group: click.Group) -> None:
    group.add_command(sync_group)
