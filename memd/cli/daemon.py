"""Daemon commands: `memd serve` runs it in the foreground, `memd status` asks it how it is."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from memd.cli import settings_from, target_from

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
    from memd.daemon.lifecycle import serve
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
    from memd.client import DaemonClient
    from memd.errors import MemdError

    target = target_from(ctx)
    try:
        status = DaemonClient(target, timeout=10.0).status()
    except MemdError as exc:
        stopped = stopped_status(target, exc)
        if as_json:
            click.echo(json.dumps(stopped, ensure_ascii=False, indent=2))
        else:
            click.echo(human_stopped(stopped))
        sys.exit(1)
    reply = {k: v for k, v in status.items() if k != "ok"}
    if as_json:
        click.echo(json.dumps(reply, ensure_ascii=False, indent=2))
        return
    click.echo(human_status(reply))


def stopped_status(target: Any, error: Exception) -> dict[str, Any]:
    """What can be said without the daemon: the store's counts, read without the writer lock
    and without loading the embedding model, and how to start it."""
    from memd.errors import MemdError

    out: dict[str, Any] = {
        "running": False,
        "socket": str(target.socket_path),
        "error": str(error),
    }
    try:
        settings = target.settings()
        out["home"] = str(settings.home)
        out["start"] = start_command(settings)
        out["memories"] = stored_counts(settings)
    except MemdError as exc:
        out["store_error"] = str(exc)
    except Exception as exc:  # a damaged table raises whatever lancedb raises
        out["store_error"] = f"the store does not open: {exc} (see `memd doctor`)"
    return out


def stored_counts(settings: Any) -> dict[str, Any] | None:
    """The store's counts by status, kind and project, or None when there is no store yet."""
    from memd.daemon.app import App

    if not (settings.home / "store").is_dir():
        return None
    app = App(settings).open(writer=False, check_model=False)  # a reader: no lock, no model
    try:
        return dict(app.store.stats())
    finally:
        app.close()


def start_command(settings: Any) -> str:
    from memd.setup.doctor import Doctor

    return Doctor(settings).start_command()


def human_stopped(s: dict[str, Any]) -> str:
    lines = [f"memd is not running ({s['error']})"]
    mem = s.get("memories")
    if s.get("store_error"):
        lines.append(f"store:      {s['store_error']}")
    elif mem is None:
        lines.append(f"store:      none yet in {s.get('home')}")
    else:
        lines.append(
            f"store:      {mem.get('total', 0)} memories, {mem.get('active', 0)} active, "
            f"in {s.get('home')} (read without the daemon)"
        )
        lines += counts_lines(mem)
    start = s.get("start") or "memd serve"
    lines.append(f"start it with `{start}` (or `memd serve` in the foreground)")
    return "\n".join(lines)


def counts_lines(mem: dict[str, Any]) -> list[str]:
    lines = []
    for kind, n in sorted(mem.get("by_kind", {}).items()):
        lines.append(f"            {n:>7}  {kind}")
    by_project = sorted(mem.get("by_project", {}).items(), key=lambda kv: -kv[1])
    for project, n in by_project[:10]:
        lines.append(f"            {n:>7}  {project}")
    if len(by_project) > 10:
        lines.append(f"            ... and {len(by_project) - 10} more projects")
    return lines


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
    lines += counts_lines(mem)
    lines.append(
        f"sessions:   {ses.get('pending', 0)} pending, {ses.get('extracted', 0)} extracted, "
        f"{ses.get('open', 0)} open, {ses.get('failed', 0)} failed"
    )
    lag = s.get("extraction_lag_seconds")
    lines.append(
        f"transcripts: {s.get('watched_files')} files, {s.get('bytes_ingested')} bytes read, "
        f"extraction lag {'-' if lag is None else duration(lag)}"
    )
    lines += backfill_lines(s.get("backfill"))
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
    sync = s.get("sync") or {}
    if sync.get("configured") or sync.get("projects"):
        from memd.cli.sync import human as sync_lines

        lines += sync_lines(sync)
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


def backfill_lines(job: Any) -> list[str]:
    """The first start's backfill of existing transcripts, in one line (none once long done)."""
    if not isinstance(job, dict):
        return []
    state = job.get("state")
    total = job.get("files_total", 0)
    if state == "skipped":
        return [
            f"history:    {total} transcript file(s) from before memd were skipped "
            "(backfill_history is off); `memd ingest ~/.claude/projects` reads them"
        ]
    if state in ("queued", "running"):
        if job.get("phase") == "extract":
            done = (
                f"extracting {job.get('segments_done', 0)}/{job.get('segments_total', 0)} segments"
            )
        else:
            done = f"read {job.get('files', 0)}/{total} files"
            eta = job.get("eta_seconds")
            if eta is not None:
                done += f", about {duration(eta)} left"
        return [f"history:    backfilling {total} transcript file(s) from before memd: {done}"]
    if state == "failed":
        return [f"history:    the backfill of existing transcripts failed: {job.get('error')}"]
    if state == "done":
        return [
            f"history:    backfilled {total} transcript file(s): "
            f"{job.get('memories_added', 0)} memories"
        ]
    return []


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
