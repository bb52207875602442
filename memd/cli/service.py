"""Set-up commands: install, uninstall (hooks and the user service), doctor and upgrade."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from memd.cli import handle_errors, settings_from

if TYPE_CHECKING:
    from memd.setup.service import ServiceChange


def echo_service(change: ServiceChange, *, dry_run: bool) -> None:
    for line in change.messages:
        click.echo(line)
    if dry_run and change.diff:
        click.echo(change.diff, nl=False)
    for cmd in change.ran:
        click.echo(f"ran: {cmd}")
    if change.todo:
        click.echo("The service manager is not reachable from here; run these commands:")
        for cmd in change.todo:
            click.echo(f"  {cmd}")


@click.command(name="install")
@click.option("--hooks", "hooks", is_flag=True, help="Only merge the hooks into settings.json.")
@click.option("--service", "service", is_flag=True, help="Only install the user service.")
@click.option("--mcp", "mcp", is_flag=True, help="Only register `memd mcp` in ~/.claude.json.")
@click.option("--commands", is_flag=True, help="Only add /remember, /recall, /forget.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.pass_context
@handle_errors
def service_install(
    ctx: click.Context, hooks: bool, service: bool, mcp: bool, commands: bool, dry_run: bool
) -> None:
    """Wire memd into Claude Code (hooks, MCP server, commands) and install the user service.

    With no option, all of them. Hooks are left to the memd plugin when it is enabled.
    """
    from memd.setup import service as user_service

    settings = settings_from(ctx)
    both = not hooks and not service and not mcp and not commands
    if hooks or both:
        install_hooks_unless_plugin(dry_run, settings)
    if mcp or commands or both:
        for change in connect_changes(mcp or both, commands or both, dry_run):
            click.echo(change.message)
            if dry_run and change.diff:
                click.echo(change.diff, nl=False)
    if service or both:
        echo_service(user_service.install_service(settings, dry_run=dry_run), dry_run=dry_run)


def install_hooks_unless_plugin(dry_run: bool, settings: Any = None) -> None:
    """`memd install --hooks`, unless the memd plugin is enabled: it registers the same hooks."""
    from memd.setup import install

    plugin = install.plugin_owning_hooks()
    if plugin:
        click.echo(
            f"the memd plugin ({plugin}) is enabled and runs memd's hooks: "
            f"not adding them to {install.claude_settings_path()} as well"
        )
        return
    change = install.install_hooks(dry_run=dry_run, settings=settings)
    click.echo(change.message)
    if dry_run and change.diff:
        click.echo(change.diff, nl=False)


def connect_changes(mcp: bool, commands: bool, dry_run: bool, remove: bool = False) -> list[Any]:
    from memd.setup import install

    changes = []
    if mcp:
        changes.append(
            install.uninstall_mcp(dry_run=dry_run)
            if remove
            else install.install_mcp(dry_run=dry_run)
        )
    if commands:
        changes.append(
            install.uninstall_commands(dry_run=dry_run)
            if remove
            else install.install_commands(dry_run=dry_run)
        )
    return changes


@click.command(name="uninstall")
@click.option("--hooks", "hooks", is_flag=True, help="Only remove the hooks.")
@click.option("--service", "service", is_flag=True, help="Only remove the user service.")
@click.option("--mcp", "mcp", is_flag=True, help="Only unregister the MCP server.")
@click.option("--commands", is_flag=True, help="Only remove /remember, /recall, /forget.")
@click.option("--purge", is_flag=True, help="Also delete $MEMD_HOME (all memories).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before --purge deletes data.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.pass_context
@handle_errors
def service_uninstall(
    ctx: click.Context,
    hooks: bool,
    service: bool,
    mcp: bool,
    commands: bool,
    purge: bool,
    yes: bool,
    dry_run: bool,
) -> None:
    """Remove exactly what `memd install` added. Memories are kept unless --purge."""
    from memd.setup import install
    from memd.setup import service as user_service

    settings = settings_from(ctx)
    both = not hooks and not service and not mcp and not commands
    if hooks or both:
        change = install.uninstall_hooks(dry_run=dry_run)
        click.echo(change.message)
        if dry_run and change.diff:
            click.echo(change.diff, nl=False)
    if mcp or commands or both:
        for change in connect_changes(mcp or both, commands or both, dry_run, remove=True):
            click.echo(change.message)
    if service or both:
        echo_service(user_service.uninstall_service(dry_run=dry_run), dry_run=dry_run)
    if not purge:
        click.echo(f"memories kept in {settings.home} (use --purge to delete them)")
        return
    if dry_run:
        click.echo(f"would delete {settings.home}")
        return
    if not yes:
        click.confirm(f"Delete {settings.home} and every memory in it?", abort=True)
    click.echo(f"deleted {install.purge_home(settings)}")


@click.command(name="doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--repair", is_flag=True, help="Fix what can be fixed, then check again.")
@click.pass_context
@handle_errors
def doctor_run(ctx: click.Context, as_json: bool, repair: bool) -> None:
    """Check the setup; for each problem, say the command that fixes it. Exit 1 on a failure."""
    from memd.setup.doctor import run_doctor

    checks = run_doctor(settings_from(ctx), repair=repair)
    healthy = all(c.ok for c in checks)
    if as_json:
        out = {"ok": healthy, "checks": [c.to_dict() for c in checks]}
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            tag = {"ok": "ok  ", "note": "note", "warn": "warn", "fail": "FAIL"}[c.level]
            click.echo(f"{tag}  {c.name:<{width}}  {c.detail}")
            if c.level != "ok" and c.fix:
                label = "to change it" if c.level == "note" else "fix"
                click.echo(f"      {'':<{width}}  {label}: {c.fix}")
        failed = sum(not c.ok for c in checks)
        click.echo("all checks passed" if healthy else f"{failed} check(s) failed")
    ctx.exit(0 if healthy else 1)


@click.command(name="upgrade")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--wait", type=float, default=30.0, show_default=True, help="Seconds to wait.")
@click.pass_context
@handle_errors
def service_upgrade(ctx: click.Context, dry_run: bool, wait: float) -> None:
    """After upgrading the memd package: point the hooks at this installation and restart the
    service (the daemon migrates the store as it starts). Exit 1 if the new daemon is not up."""
    from memd.setup.upgrade import upgrade

    report = upgrade(settings_from(ctx), dry_run=dry_run, wait=wait)
    for line in report.messages:
        click.echo(line)
    if report.todo:
        click.echo("Run these commands to finish:")
        for cmd in report.todo:
            click.echo(f"  {cmd}")
    ctx.exit(0 if report.ok else 1)


def register(group: click.Group) -> None:
    for command in (service_install, service_uninstall, doctor_run, service_upgrade):
        group.add_command(command)
