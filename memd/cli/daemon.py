"""Daemon commands: `memd serve` runs it in the foreground, `memd status` asks it how it is."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from memd.cli import settings_from

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@click.command(name="serve")
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default=None,
    help="Log level on stderr (default: settings.log_level, MEMD_LOG_LEVEL).",
)
@click.pass_context
def daemon_serve(ctx: click.Context, log_level: str | None) -> None:
    """Run the daemon in the foreground (systemd and launchd run this)."""
    from memd.daemon import serve
    from memd.errors import LockedError, MemdError

    try:
        settings = settings_from(ctx, log_level=log_level)
        code = serve(settings)
    except LockedError as exc:
        click.echo(f"memd is already running ({exc})", err=True)
        sys.exit(3)
    except MemdError as exc:
        click.echo(f"memd: {exc}", err=True)
        sys.exit(3 if exc.exit_code == 3 else exc.exit_code)
    sys.exit(code)


@click.command(name="status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def daemon_status(ctx: click.Context, as_json: bool) -> None:
    """Daemon health. Exit 0 when it is running, 1 when it is not."""
    from memd.client import daemon_request
    from memd.errors import MemdError

    settings = settings_from(ctx)
    try:
        reply = daemon_request(settings, "status", timeout=10.0)
    except MemdError as exc:
        if as_json:
            click.echo(
                json.dumps(
                    {"running": False, "socket": str(settings.socket_path), "error": str(exc)},
                    indent=2,
                )
            )
        else:
            click.echo(f"memd is not running ({exc})")
            click.echo("start it with `memd serve`, or `memd install --service`")
        sys.exit(1)
    reply.pop("ok", None)
    if as_json:
        click.echo(json.dumps(reply, ensure_ascii=False, indent=2))
        return
    click.echo(human_status(reply))


def human_status(s: dict[str, Any]) -> str:
    mem = s.get("memories", {})
    ses = s.get("sessions", {})
    ext = s.get("extractor", {})
    lines = [
        f"memd {s.get('version')} running, pid {s.get('pid')}, up {duration(s.get('uptime_seconds'))}",
        f"socket:     {s.get('socket')}",
        f"home:       {s.get('home')}",
        f"memories:   {mem.get('total', 0)} total, {mem.get('active', 0)} active",
    ]
    for kind, n in sorted(mem.get("by_kind", {}).items()):
        lines.append(f"            {n:>7}  {kind}")
    by_project = sorted(mem.get("by_project", {}).items(), key=lambda kv: -kv[1])
    for project, n in by_project[:10]:
        lines.append(f"            {n:>7}  {project}")
    if len(by_project) > 10:
        lines.append(f"            ... and {len(by_project) - 10} more projects")
    lines.append(
        f"sessions:   {ses.get('pending', 0)} pending, {ses.get('extracted', 0)} extracted, "
        f"{ses.get('open', 0)} open, {ses.get('failed', 0)} failed"
    )
    lag = s.get("extraction_lag_seconds")
    lines.append(
        f"transcripts: {s.get('watched_files')} files, {s.get('bytes_ingested')} bytes read, "
        f"extraction lag {'-' if lag is None else duration(lag)}"
    )
    lines.append(
        f"extractor:  {ext.get('backend')}: {ext.get('calls', 0)} calls, "
        f"{ext.get('tokens', 0)} tokens, {ext.get('failures', 0)} failures, "
        f"{ext.get('fallbacks', 0)} fallbacks"
        + (", budget exhausted" if ext.get("budget_exhausted") else "")
    )
    jobs = s.get("jobs") or []
    if jobs:
        lines.append("jobs:")
        for job in jobs:
            lines.append(
                f"  {job.get('name', '?'):<10} last {job.get('last_run') or '-'} "
                f"({job.get('last_status') or '-'}), next {job.get('next_run') or '-'}"
            )
    req = s.get("requests", {})
    lines.append(
        f"requests:   {req.get('requests', 0)} served, {req.get('errors', 0)} errors, "
        f"{req.get('refused', 0)} refused"
    )
    errors = s.get("last_errors") or []
    if errors:
        lines.append("last errors:")
        for e in errors[-5:]:
            lines.append(
                f"  {e.get('time')} {e.get('level')} {e.get('logger')}: {e.get('message')}"
            )
    return "\n".join(lines)


def duration(seconds: Any) -> str:
    if seconds is None:
        return "-"
    s = int(float(seconds))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def register(group: click.Group) -> None:
    group.add_command(daemon_serve)
    group.add_command(daemon_status)
