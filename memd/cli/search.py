"""`memd search`: the relevant memories of this project (or of every project), labelled with
their project; when there are none, where else there are matches, and with ``--explain`` the
nearest candidates and why each missed."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import click

from memd.cli import client_from, handle_errors
from memd.cli.memories import cwd, echo_json, project_dir, short
from memd.names import KINDS, USER_SCOPE


def label(project: str, here: str | None) -> str:
    """A result's project as a tag: none for the project searched, ``[user-wide]``, else its path."""
    if project == here:
        return ""
    return "  [user-wide]" if project == USER_SCOPE else f"  [{project}]"


def why_missed(b: dict[str, Any]) -> str:
    """Why a candidate failed the relevance decision, in words."""
    if b["semantic"] <= 0:
        meaning = f"in meaning it is no closer than unrelated texts (cosine {b['cosine']:.2f})"
    else:
        meaning = (
            f"its meaning is a weak match (semantic {b['semantic']:.2f}, cosine {b['cosine']:.2f})"
        )
    if b["lexical"] <= 0:
        words = "it shares none of the query's words"
    else:
        words = f"it carries {b['lexical']:.0%} of the query's words (weighted by rarity)"
    return f"relevance {b['relevance']:.2f} is under the threshold {b['threshold']:.2f}: {meaning}; {words}"


def echo_results(results: Sequence[Mapping[str, Any]], here: str | None, explain: bool) -> None:
    if explain:
        from memd.recall.hits import breakdown_from_json
        from memd.recall.hits import explain as explain_line
    for r in results:
        click.echo(f"{r['score']:.3f}  {short(r)}{label(r['project'], here)}")
        if explain:
            click.echo(f"       why: {explain_line(breakdown_from_json(r['score_breakdown']))}")
            for s in r["sources"][:3]:
                click.echo(
                    f"       from: session {s['session_id']} line {s['uuid']} {s['timestamp']}"
                )


def echo_nothing(reply: Mapping[str, Any], query: str, explain: bool) -> None:
    """An empty answer: where it looked, where else there are matches, the near misses."""
    here = reply.get("project")
    where = "in any project" if here is None else f"in {here} (or user-wide)"
    click.echo(f"no memories found {where}")
    elsewhere = reply.get("elsewhere") or []
    if elsewhere:
        listed = ", ".join(f"{e['project']} ({e['count']})" for e in elsewhere)
        click.echo(f"other projects have matches: {listed}")
        click.echo(
            f"  look there: memd search {shlex.quote(query)} --all-projects (or --project DIR)"
        )
    if not explain:
        return
    missed = reply.get("missed") or []
    if not missed:
        click.echo("nothing in this scope shares a word with the query or comes near its meaning")
        return
    click.echo("nearest candidates, none relevant enough:")
    for r in missed:
        click.echo(f"{r['score']:.3f}  {short(r)}{label(r['project'], here)}")
        click.echo(f"       missed: {why_missed(r['score_breakdown'])}")


@click.command(name="search")
@click.argument("query", nargs=-1, required=True)
@click.option("--project", type=click.Path(file_okay=False), help="Project dir (default: cwd).")
@click.option("--all-projects", is_flag=True, help="Search every project.")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=None, help="Results.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only these kinds.")
@click.option("--all", "include_all", is_flag=True, help="Include superseded and archived.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--explain", is_flag=True, help="Show why each result was chosen (or missed).")
@click.pass_context
@handle_errors
def memories_search(
    ctx: click.Context,
    query: tuple[str, ...],
    project: str | None,
    all_projects: bool,
    limit: int | None,
    kinds: tuple[str, ...],
    include_all: bool,
    as_json: bool,
    explain: bool,
) -> None:
    """Search memories of this project (and user-wide ones), or of --all-projects."""
    if all_projects and project:
        raise click.UsageError("give --project or --all-projects, not both")
    text = " ".join(query)
    reply = client_from(ctx).search(
        query=text,
        cwd=cwd(),
        project=project_dir(project),
        limit=limit,
        kinds=list(kinds) or None,
        include_all=include_all,
        all_projects=all_projects,
        explain=explain,
    )
    results = reply["results"]
    if as_json:
        echo_json(results)
        return
    if results:
        echo_results(results, reply.get("project"), explain)
    else:
        echo_nothing(reply, text, explain)


def register(group: click.Group) -> None:
    group.add_command(memories_search)
