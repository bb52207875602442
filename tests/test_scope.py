"""Scope you can see (#32): `memd search` and `memd list` say where they looked, label results
from elsewhere, point to the projects that have matches, and `--explain` with no result names
the nearest candidates and why each missed. Through a real daemon."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from daemon_process import add_project, served

DEPLOY = "Deploys go out with the blue-green script in tools/deploy.sh"
QUEUE = "The job queue takes Postgres advisory locks"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with served(tmp_path_factory.mktemp("scope")) as daemon:
        shop, _ = add_project(daemon, "shop", [DEPLOY, QUEUE])
        blog, _ = add_project(daemon, "blog", ["Posts are written in Markdown with front matter"])
        empty = daemon.root / "empty"  # type: ignore[attr-defined]
        (empty / ".git").mkdir(parents=True)
        yield {"daemon": daemon, "shop": shop, "blog": blog, "empty": str(empty)}


def run(world: dict[str, Any], *args: str, cwd: str | None = None) -> str:
    out = world["daemon"].memd(*args, cwd=cwd or world["empty"])
    assert out.returncode == 0, out.stderr
    return str(out.stdout)


def test_an_empty_project_says_where_it_looked_and_where_the_matches_are(
    world: dict[str, Any],
) -> None:
    out = run(world, "search", "how do we deploy")
    assert out.startswith(f"no memories found in {world['empty']} (or user-wide)\n")
    assert f"other projects have matches: {world['shop']} (1)" in out
    assert "memd search 'how do we deploy' --all-projects" in out
    assert world["blog"] not in out  # it has nothing about deploying


def test_all_projects_searches_everywhere_and_labels_the_project(world: dict[str, Any]) -> None:
    out = run(world, "search", "how do we deploy", "--all-projects")
    first = out.splitlines()[0]
    assert "blue-green script" in first and first.endswith(f"[{world['shop']}]")
    found = json.loads(run(world, "search", "how do we deploy", "--all-projects", "--json"))
    assert [r["project"] for r in found] == [world["shop"]]
    # In the project itself, no label (the project searched is implied).
    here = run(world, "search", "how do we deploy", cwd=world["shop"]).splitlines()[0]
    assert "blue-green" in here and "[" not in here
    both = world["daemon"].memd("search", "x", "--all-projects", "--project", world["shop"])
    assert both.returncode == 2 and "not both" in both.stderr


def test_explain_with_no_result_names_the_nearest_candidates_and_why(
    world: dict[str, Any],
) -> None:
    out = run(world, "search", "which database migrations tool", "--explain", cwd=world["shop"])
    lines = out.splitlines()
    assert lines[0] == f"no memories found in {world['shop']} (or user-wide)"
    assert "nearest candidates, none relevant enough:" in lines
    missed = [line for line in lines if line.strip().startswith("missed:")]
    assert len(missed) == 2  # both of the shop's memories, each with its reason
    for line in missed:
        assert "is under the threshold 0.30" in line and "cosine" in line
        assert "no closer than unrelated texts" in line or "weak match" in line
        assert "of the query's words" in line
    # The JSON reply of the socket carries them too.
    reply = world["daemon"].request(
        {
            "cmd": "search",
            "query": "which database migrations tool",
            "cwd": world["shop"],
            "explain": True,
        }
    )
    assert reply["results"] == [] and len(reply["missed"]) == 2
    assert all(not r["relevant"] for r in reply["missed"])
    nothing = run(world, "search", "anything at all", "--explain")
    assert "nothing in this scope shares a word" in nothing


def test_list_says_its_scope_limits_and_labels(world: dict[str, Any]) -> None:
    out = run(world, "list")
    assert f"0 memories in {world['empty']} (and user-wide)" in out
    assert "other projects hold 3 memories: memd list --all-projects" in out
    everywhere = run(world, "list", "--all-projects").splitlines()
    assert sum(f"[{world['shop']}]" in line for line in everywhere) == 2
    assert sum(f"[{world['blog']}]" in line for line in everywhere) == 1
    assert everywhere[-1] == "3 memories"
    limited = run(world, "list", "--limit", "1", cwd=world["shop"]).splitlines()
    assert (
        len(limited) == 2 and limited[-1] == f"1 of 2 memories in {world['shop']} (and user-wide)"
    )
    assert json.loads(run(world, "list", "--json", "-n", "1", cwd=world["shop"]))[0]["id"]
