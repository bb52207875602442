"""`memd jobs`: the scheduled maintenance jobs, their next and last runs; `memd jobs run NAME`."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from memd.cli import client_from, handle_errors
from memd.names import JOB_NAMES


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def summary(result: Any) -> str:
    """One line: plain values as k=v; optimize's before/after as rows, version and fragments."""
    if not result:
        return ""
    if not isinstance(result, dict):
        return str(result)
    parts = [
        f"{k}={v}" for k, v in result.items() if not isinstance(v, (list, dict)) and v is not None
    ]
    before, after = result.get("before"), result.get("after")
    if isinstance(before, dict) and isinstance(after, dict):
        parts += [f"{k} {before.get(k)}→{after.get(k)}" for k in ("rows", "version", "fragments")]
    return ", ".join(parts)


@click.group(name="jobs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def jobs_list(ctx: click.Context, as_json: bool) -> None:
    """List the maintenance jobs with their next and last run and result."""
    if ctx.invoked_subcommand is not None:
        return
    reply = client_from(ctx).jobs()
    jobs = reply["jobs"]
    if as_json:
        echo_json(jobs)
        return
    if not reply.get("scheduled", True):
        where = "daemon" if reply.get("via") == "local" else "scheduler"
        click.echo(f"the {where} is not running: nothing is scheduled (last runs shown)")
    for job in jobs:
        click.echo(
            f"{job['name']:<9} next {job.get('next_run') or '-':<21} "
            f"last {job.get('last_run') or 'never':<25} {job.get('last_status') or ''}"
        )
        if job.get("last_result"):
            click.echo(f"          {summary(job['last_result'])}")
            run = job["last_result"].get("run") if isinstance(job["last_result"], dict) else None
            if run:
                click.echo(f"          undo this run: memd restore --run {run}")


@jobs_list.command(name="run")
@click.argument("name", type=click.Choice(JOB_NAMES))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def jobs_run(ctx: click.Context, name: str, as_json: bool) -> None:
    """Run job NAME now (through the daemon when it runs, else in this process)."""
    reply = client_from(ctx).jobs_run(name=name)
    record = {k: v for k, v in reply.items() if k != "ok"}
    if as_json:
        echo_json(record)
    else:
        result = record.get("last_result")
        click.echo(f"{name}: {record.get('last_status')} {summary(result)}")
        if isinstance(result, dict) and result.get("run"):
            click.echo(f"undo this run: memd restore --run {result['run']}")
    if str(record.get("last_status", "")).startswith("error"):
        sys.exit(1)


def register(group: click.Group) -> None:
    group.add_command(jobs_list)
