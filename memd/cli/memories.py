"""Memory commands: add, list, show, forget, pin, restore, import, export, reindex, config."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import click

from memd.cli import client_from, handle_errors, settings_from
from memd.names import KINDS, USER_SCOPE

IMPORT_ERRORS_SHOWN = 5
"""`memd import` names this many bad lines (`--json` more)."""


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def echo_reply(reply: Mapping[str, Any]) -> None:
    """A daemon reply as JSON, without its ``ok``."""
    echo_json({k: v for k, v in reply.items() if k != "ok"})


def cwd() -> str:
    return os.getcwd()


def project_dir(value: str | None) -> str | None:
    """``--project``: resolved here to its git root (the daemon runs in another directory)."""
    if not value or value == USER_SCOPE or value.startswith("user:"):
        return value
    from memd.project import resolve_project

    return resolve_project(os.path.abspath(os.path.expanduser(value)))


def count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def short(memory: Mapping[str, Any]) -> str:
    pin = " [pinned]" if memory.get("pinned") else ""
    status = "" if memory.get("status", "active") == "active" else f" ({memory['status']})"
    return f"{memory['id'][:10]}  {memory['kind']:<10} {memory['text']}{pin}{status}"


@click.command(name="add")
@click.argument("text", nargs=-1, required=True)
@click.option("--project", type=click.Path(file_okay=False), help="Project dir, or 'user:global'.")
@click.option(
    "--kind", type=click.Choice(KINDS), default=None, help="Default: inferred from the text."
)
@click.option("--pin", is_flag=True, help="Pin it: always in the session-start brief.")
@click.option("--topic", default="", help="Topic heading for export.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def memories_add(
    ctx: click.Context,
    text: tuple[str, ...],
    project: str | None,
    kind: str | None,
    pin: bool,
    topic: str,
    as_json: bool,
) -> None:
    """Remember TEXT (secrets are redacted first). Without --kind, the kind is inferred from
    the text ("TODO: ..." a todo, "We decided ..." a decision, "Always ..." a preference, ...)."""
    from memd.phrasing import kind_of

    words = " ".join(text)
    inferred = kind is None
    reply = client_from(ctx).add(
        text=words,
        cwd=cwd(),
        project=project_dir(project),
        kind=kind or kind_of(words),
        pin=pin,
        topic=topic,
    )
    if as_json:
        echo_json({**reply, "kind_inferred": inferred})
        return
    result = reply["result"]
    verb = {"inserted": "added", "merged": "merged into", "unchanged": "already known:"}
    click.echo(f"{verb.get(result['action'], result['action'])} {short(reply['memory'])}")
    if inferred and result["action"] == "inserted":
        chosen = reply["memory"]["kind"]
        click.echo(f"kind: {chosen}, inferred from the text (--kind sets another)")
    for old in result.get("superseded", []):
        click.echo(f"supersedes {old[:10]}")


@click.command(name="list")
@click.option("--project", type=click.Path(file_okay=False), help="Project dir (default: cwd).")
@click.option("--kind", type=click.Choice(KINDS), default=None)
@click.option("--all", "include_all", is_flag=True, help="Include superseded and archived.")
@click.option("--all-projects", is_flag=True, help="Every project, not just this one.")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=1000, help="At most N.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def memories_list(
    ctx: click.Context,
    project: str | None,
    kind: str | None,
    include_all: bool,
    all_projects: bool,
    limit: int,
    as_json: bool,
) -> None:
    """List memories of this project (and user-wide ones), or of --all-projects."""
    if all_projects and project:
        raise click.UsageError("give --project or --all-projects, not both")
    here = project_dir(project or cwd())
    reply = client_from(ctx).list_memories(
        cwd=cwd(),
        project=project_dir(project),
        kind=kind,
        include_all=include_all,
        all_projects=all_projects,
        limit=limit,
    )
    memories = reply["memories"]
    if as_json:
        echo_json(memories)
        return
    for m in memories:
        tag = "" if m["project"] == here else f"  [{m['project']}]"
        click.echo(short(m) + tag.replace(f"[{USER_SCOPE}]", "[user-wide]"))
    total = reply["total"]
    shown = f"{len(memories)} of " if len(memories) < total else ""
    scope = "" if all_projects else f" in {here} (and user-wide)"
    click.echo(f"{shown}{count(total, 'memory', 'memories')}{scope}")
    if not total and reply.get("elsewhere"):
        n = count(reply["elsewhere"], "memory", "memories")
        click.echo(f"other projects hold {n}: memd list --all-projects (or --project DIR)")


@click.command(name="show")
@click.argument("id")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def memories_show(ctx: click.Context, id: str, as_json: bool) -> None:
    """Show one memory with its provenance and history."""
    memory = client_from(ctx).show(id=id)["memory"]
    if as_json:
        echo_json(memory)
        return
    click.echo(short(memory))
    for key in (
        "project",
        "topic",
        "importance",
        "hits",
        "created_at",
        "updated_at",
        "last_used_at",
    ):
        value = memory.get(key)
        if isinstance(value, float):  # stored as float32: 0.7 reads back as 0.699999988...
            value = round(value, 3)
        click.echo(f"  {key}: {value}")
    if memory.get("keywords"):
        click.echo(f"  keywords: {', '.join(memory['keywords'])}")
    if memory.get("subject"):
        click.echo(f"  subject: {memory['subject']} = {memory.get('value', '')}")
    if memory.get("superseded_by"):
        click.echo(
            f"  superseded by {memory['superseded_by']}: {memory.get('superseded_by_text', '')}"
        )
    for old in memory.get("supersedes", []):
        click.echo(f"  supersedes {old['id']}: {old['text']}")
    for s in memory.get("sources", []):
        click.echo(f"  source: session {s['session_id']} line {s['uuid']} at {s['timestamp']}")
    from memd.timeline import lines

    click.echo("  history:")
    for line in lines(memory):
        click.echo(f"    {line}")


def _id_command(name: str, verb: str, help: str, pinned: bool) -> click.Command:
    @click.command(name=name, help=f"{help} ID may be any unique prefix of 4+ characters.")
    @click.argument("id")
    @click.pass_context
    @handle_errors
    def command(ctx: click.Context, id: str) -> None:
        memory = client_from(ctx).pin(id=id, pinned=pinned)["memory"]
        click.echo(f"{verb} {memory['id'][:10]}  {memory['text']}")

    command.callback.__name__ = f"memories_{name}"  # type: ignore[union-attr]
    return command


memories_pin = _id_command("pin", "pinned", "Pin memory ID: always in the session brief.", True)
memories_unpin = _id_command("unpin", "unpinned", "Unpin memory ID.", False)


def id_args(ids: tuple[str, ...]) -> dict[str, Any]:
    """One id as ``id`` (its errors name it), several as ``ids`` (one write for all)."""
    return {"id": ids[0]} if len(ids) == 1 else {"ids": list(ids)}


@click.command(name="forget")
@click.argument("ids", nargs=-1, required=True)
@click.option("--purge", is_flag=True, help="Delete for good instead (asks first).")
@click.option("--yes", "-y", is_flag=True, help="With --purge: do not ask.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def memories_forget(
    ctx: click.Context, ids: tuple[str, ...], purge: bool, yes: bool, as_json: bool
) -> None:
    """Forget memories ID...: archive them, so no hook, brief or search offers them again;
    `memd restore ID` brings one back. --purge deletes them for good. An ID may be any unique
    prefix of 4+ characters."""
    daemon = client_from(ctx)
    if purge and not yes:
        shown = [daemon.show(id=i)["memory"] for i in ids]
        for memory in shown:
            click.echo(short(memory))
        n = count(len(shown), "memory", "memories")
        click.confirm(f"Delete {n} for good? This cannot be undone", abort=True, err=True)
        ids = tuple(m["id"] for m in shown)
    reply = daemon.forget(purge=purge, **id_args(ids))
    if as_json:
        echo_reply(reply)
        return
    gone: Sequence[Mapping[str, Any]]
    if len(ids) == 1:
        gone = [{"id": reply["forgotten"], "text": reply["text"]}]
    else:
        gone = reply["memories"]
        for mid in reply.get("already", []):
            click.echo(f"already archived: {mid[:10]}")
    for m in gone:
        click.echo(f"{'deleted' if purge else 'forgot'} {m['id'][:10]}  {m['text']}")
    if gone and not purge:
        restore = " ".join(m["id"][:10] for m in gone[:20])
        click.echo(f"archived, not deleted: `memd restore {restore}` brings it back")


@click.command(name="restore")
@click.argument("ids", nargs=-1)
@click.option(
    "--project", type=click.Path(file_okay=False), help="Every archived memory of this project."
)
@click.option("--session", help="Every archived memory learned in this session.")
@click.option(
    "--run", help="Every memory archived by this cleanup run (`memd jobs` shows it; 'last')."
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def memories_restore(
    ctx: click.Context,
    ids: tuple[str, ...],
    project: str | None,
    session: str | None,
    run: str | None,
    as_json: bool,
) -> None:
    """Bring memories back: IDs (archived or superseded), or every archived memory of a
    project, a session or a cleanup run. An ID may be any unique prefix of 4+ characters."""
    if bool(ids) == bool(project or session or run):
        raise click.UsageError("give IDs, or --project, --session or --run (not both)")
    args = id_args(ids) if ids else {"project": project_dir(project), "session": session}
    if run:
        args["run"] = run
    reply = client_from(ctx).restore(**args)
    if as_json:
        echo_reply(reply)
        return
    restored = [reply["memory"]] if "memory" in reply else reply["memories"]
    for mid in reply.get("already", []):
        click.echo(f"already active: {mid[:10]}")
    for memory in restored:
        click.echo(f"restored {short(memory)}")
    if len(restored) > 1:
        click.echo(f"restored {count(len(restored), 'memory', 'memories')}")


@click.command(name="import")
@click.argument("path", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def memories_import(ctx: click.Context, path: str, as_json: bool) -> None:
    """Import a JSONL file (one memory per line) or a directory written by `memd export`.
    Anything else is refused with one error; a file with no valid line imports nothing and
    exits 1."""
    reply = client_from(ctx).import_memories(path=os.path.abspath(path), cwd=cwd())
    if as_json:
        echo_reply(reply)
        return
    read = count(
        reply["read"],
        *(("line", "lines") if reply.get("kind") == "jsonl" else ("memory", "memories")),
    )
    counts = ", ".join(f"{reply[k]} {k}" for k in ("added", "updated", "unchanged", "skipped"))
    click.echo(f"read {read} from {path}: {counts}")
    errors = reply.get("errors", [])
    for err in errors[:IMPORT_ERRORS_SHOWN]:
        click.echo(f"skipped {err}", err=True)
    if reply["skipped"] > IMPORT_ERRORS_SHOWN:
        more = reply["skipped"] - IMPORT_ERRORS_SHOWN
        click.echo(f"... and {more} more skipped (--json lists the first {len(errors)})", err=True)


@click.command(name="export")
@click.argument("path", type=click.Path(file_okay=False))
@click.pass_context
@handle_errors
def memories_export(ctx: click.Context, path: str) -> None:
    """Write readable Markdown per project, plus index.json, to PATH."""
    reply = client_from(ctx).export(path=os.path.abspath(path))
    click.echo(
        f"exported {count(reply['memories'], 'memory', 'memories')} of "
        f"{count(reply['projects'], 'project', 'projects')} to {reply['dir']}"
    )


@click.command(name="reindex")
@click.pass_context
@handle_errors
def memories_reindex(ctx: click.Context) -> None:
    """Re-embed every memory with the configured model (after a model change)."""
    from memd.client import DaemonClient
    from memd.daemon.app import App
    from memd.errors import DaemonUnavailable

    settings = settings_from(ctx)
    try:
        reindexed = dict(DaemonClient(settings).reindex())
    except DaemonUnavailable:  # not `local`: an old model must not stop the store opening
        app = App(settings).open(writer=True, check_model=False)
        try:
            reindexed = app.reindex()
        finally:
            app.close()
    click.echo(f"re-embedded {reindexed['reindexed']} memories with {reindexed['model']}")


@click.command(name="config")
@click.option("--json", "as_json", is_flag=True)
@click.option("--example", is_flag=True, help="Print a commented config file with every default.")
@click.pass_context
@handle_errors
def config_show(ctx: click.Context, as_json: bool, example: bool) -> None:
    """Print the effective settings and where each value came from."""
    from memd.settings import describe_settings, example_toml

    if example:
        click.echo(example_toml(), nl=False)
        return
    settings = settings_from(ctx)
    rows = describe_settings(settings, **(ctx.find_root().obj or {}))
    if as_json:
        echo_json(rows)
        return
    click.echo(f"config file: {settings.config_path}")
    for row in rows:
        click.echo(f"{row['name']} = {row['value']!r}  [{row['source']}]")


def register(group: click.Group) -> None:
    for command in (
        memories_add,
        memories_list,
        memories_show,
        memories_forget,
        memories_pin,
        memories_unpin,
        memories_restore,
        memories_import,
        memories_export,
        memories_reindex,
        config_show,
    ):
        group.add_command(command)
