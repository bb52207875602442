"""`memd import` recognises what it was given (#32): an export directory, one of its files,
JSON Lines, or something else; a wrong kind of file gets one clear error, a non-zero exit and
changes nothing; the summary counts read, added, updated, unchanged and skipped, and names the
first bad lines. Through a real daemon."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import add_project, served


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("import")
    with served(root) as daemon:
        shop, _ = add_project(daemon, "shop", ["The shop's queue is RabbitMQ"])
        export = root / "export"
        out = daemon.memd("export", str(export))
        assert out.returncode == 0, out.stderr
        yield {"daemon": daemon, "shop": shop, "export": export, "root": root}


def memories(world: dict[str, Any]) -> list[dict[str, Any]]:
    out = world["daemon"].memd("list", "--all-projects", "--all", "--json")
    return list(json.loads(out.stdout))


def refused(world: dict[str, Any], path: Path, *needles: str) -> None:
    before = memories(world)
    run = world["daemon"].memd("import", str(path), cwd=world["shop"])
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert run.stderr.startswith("memd: ") and run.stderr.count("\n") == 1, run.stderr
    for needle in needles:
        assert needle in run.stderr, run.stderr
    assert run.stdout == ""
    assert memories(world) == before  # nothing was imported


def test_one_file_of_an_export_is_refused_with_the_command_to_run(world: dict[str, Any]) -> None:
    export = world["export"]
    refused(world, export / "index.json", "the index of a `memd export` directory")
    refused(world, export / "index.json", f"memd import {export}")
    (md,) = export.glob("*.md")
    refused(world, md, "one file of a `memd export` directory", f"memd import {export}")
    plain = world["root"] / "notes"
    plain.mkdir()
    refused(world, plain, "a directory without index.json")


def test_other_kinds_of_file_are_refused(world: dict[str, Any]) -> None:
    root = world["root"]
    csv = root / "memories.csv"
    csv.write_text("text,kind\nUse pnpm,preference\n")
    refused(world, csv, "not JSON Lines", "'text,kind'", "one memory object per line")
    array = root / "memories.json"
    array.write_text(json.dumps([{"text": "Use pnpm"}]))
    refused(world, array, "not JSON Lines (a JSON document spread over several lines)")
    pretty = root / "pretty.json"
    pretty.write_text(json.dumps({"text": "Use pnpm"}, indent=2))
    refused(world, pretty, "a JSON document")
    binary = root / "model.bin"
    binary.write_bytes(b"\x00\x01\x02{\xff")
    refused(world, binary, "binary file")
    empty = root / "empty.jsonl"
    empty.write_text("\n\n")
    refused(world, empty, "is empty")


def test_a_file_with_no_valid_line_exits_non_zero(world: dict[str, Any]) -> None:
    path = world["root"] / "bad.jsonl"
    path.write_text(json.dumps({"kind": "fact"}) + "\n" + json.dumps({"text": 3}) + "\n")
    refused(world, path, "no line is a memory, nothing was imported", "line 1: missing 'text'")


def test_the_summary_counts_and_names_the_first_bad_lines(world: dict[str, Any]) -> None:
    path = world["root"] / "mixed.jsonl"
    good = [{"text": f"Fact {i} about the shop's billing module"} for i in range(3)]
    lines = [json.dumps(good[0]), "{not json", json.dumps(good[1]), '"a string"']
    lines += [json.dumps({"text": "x", "kind": "gossip"}), json.dumps(good[2])]
    lines += ["nope"] * 6
    path.write_text("\n".join(lines) + "\n")
    run = world["daemon"].memd("import", str(path), cwd=world["shop"])
    assert run.returncode == 0, run.stderr
    assert run.stdout == (
        f"read 12 lines from {path}: 3 added, 0 updated, 0 unchanged, 9 skipped\n"
    )
    errors = run.stderr.splitlines()
    assert errors[0].startswith("skipped line 2: not valid JSON (")
    assert errors[1] == "skipped line 4: not a JSON object"
    assert errors[2].startswith("skipped line 5: unknown kind 'gossip'")
    assert len(errors) == 6 and errors[-1].startswith("... and 4 more skipped")
    again = world["daemon"].memd("import", str(path), "--json", cwd=world["shop"])
    report = json.loads(again.stdout)
    assert (report["added"], report["unchanged"], report["skipped"]) == (0, 3, 9)
    assert len(report["errors"]) == 9


def test_an_edited_export_reports_what_it_updated(world: dict[str, Any]) -> None:
    export = world["export"]
    (md,) = export.glob("*.md")
    md.write_text(md.read_text().replace("queue is RabbitMQ", "queue is RabbitMQ 3.13"))
    run = world["daemon"].memd("import", str(export))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"read 1 memory from {export}: 0 added, 1 updated, 0 unchanged")
