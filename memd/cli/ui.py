"""`memd ui` (the local web app) and `memd stats` (what the store holds, in numbers)."""

from __future__ import annotations

import json

import click

from memd.cli import handle_errors, settings_from
from memd.client import DaemonClient


@click.command(name="ui")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="Port (default: any free one)."
)
@click.option("--no-browser", is_flag=True, help="Only print the URL; do not open a browser.")
@click.pass_context
@handle_errors
def ui(ctx: click.Context, port: int, no_browser: bool) -> None:
    """Browse and curate memories in a local web app (127.0.0.1 only).

    Prints the URL with its one-time login token and serves until interrupted (Ctrl-C).
    The daemon must run: the app reads and writes through its socket.
    """
    from memd.ui.serve import run

    def announce(url: str) -> None:
        click.echo(url)
        click.echo("memd ui: serving on 127.0.0.1 until interrupted (Ctrl-C)", err=True)

    run(settings_from(ctx), port, not no_browser, announce)


def size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


@click.command(name="stats")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def stats(ctx: click.Context, as_json: bool) -> None:
    """Counts by project, kind and status, growth per week, hits, most and least used memories,
    store size on disk (through the daemon, or read directly when it is not running)."""
    reply = DaemonClient(settings_from(ctx), local=True).stats()
    data = reply["stats"]
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    click.echo(
        f"{data['total']} memories ({data['active']} active), "
        f"store {size(data['store_bytes'])} on disk, journal {size(data['journal_bytes'])}"
    )
    for title, key in (("status", "by_status"), ("kind", "by_kind")):
        click.echo(f"by {title}: " + ", ".join(f"{k} {v}" for k, v in data[key].items()))
    click.echo("by project:")
    for p in data["projects"]:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(p["by_kind"].items()))
        click.echo(f"  {p['project']}: {p['total']} ({kinds}); last activity {p['last_activity']}")
    growth = data["growth"]
    if growth["weeks"]:
        click.echo("new memories per week:")
        for i, week in enumerate(growth["weeks"][-8:]):
            at = len(growth["weeks"]) - min(8, len(growth["weeks"])) + i
            n = sum(values[at] for values in growth["series"].values())
            click.echo(f"  {week}: {n}")
    hits = data["hits"]
    click.echo(f"hits: {hits['total']} in all; {hits['used']} memories used at least once")
    for title, key in (("most used", "most_used"), ("least used", "least_used")):
        if data[key]:
            click.echo(f"{title}:")
            for m in data[key]:
                click.echo(f"  {m['id'][:10]}  {m['hits']:>5} hits  {m['text'][:80]}")


def register(group: click.Group) -> None:
    group.add_command(ui)
    group.add_command(stats)
