"""The docs against the code: every `memd ...` example in README.md and docs/*.md names a real
subcommand and only flags its `--help` lists; relative links resolve; the README and
BENCHMARKS.md stay short."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memd.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SEPARATORS = {"&&", "||", ";", "|", "(", ")", "$("}
OUTPUT = ("memd is already running",)
"""What memd prints, quoted in the docs: not commands."""


def code_lines(text: str) -> list[str]:
    """Each line of the fenced blocks, and each inline code span outside them (joined when it
    wraps), with a shell comment cut off."""
    lines: list[str] = []
    for block in FENCE.findall(text):
        lines += block.splitlines()[1:-1]
    for span in re.findall(r"`([^`]+)`", FENCE.sub("", text)):
        lines.append(" ".join(span.split()))
    return [re.split(r"(?:^|\s)#", line, maxsplit=1)[0] for line in lines]


def tokens(line: str) -> list[str]:
    try:
        words = shlex.split(line.replace("\\|", "|"))
    except ValueError:
        words = line.split()
    return [w.strip("[]") for w in words if w.strip("[]")]


def commands(line: str) -> list[list[str]]:
    """The `memd` invocations of one line, each as its words after `memd`. A command starts at
    the start of the line or after a separator (`&&`, `;`, `|`); `a | --b` after a memd
    command is the usage notation for alternatives and stays in that command."""
    found: list[list[str]] = []
    current: list[str] | None = None
    at_start = True
    words = tokens(line)
    for i, word in enumerate(words):
        if word in SEPARATORS:
            following = words[i + 1] if i + 1 < len(words) else ""
            if word == "|" and current is not None and following.startswith("-"):
                continue
            current, at_start = None, True
            continue
        if at_start and re.fullmatch(r"[A-Z_]+=\S*", word):
            continue  # an environment assignment before the command
        if at_start and (word == "memd" or word.endswith("/memd")):
            current = []
            found.append(current)
        elif current is not None:
            current.append(word)
        at_start = False
    return found


@functools.cache
def help_text(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def takes_value(command: click.Command, flag: str) -> bool:
    for param in command.params:
        if isinstance(param, click.Option) and flag in param.opts:
            return not param.is_flag and not param.count
    return False


def check(words: list[str]) -> list[str]:
    """What is wrong with `memd WORDS` against the CLI: an unknown subcommand, or a `--flag`
    that the subcommand's `--help` does not list."""
    problems: list[str] = []
    path: list[str] = []
    command: click.Command = main
    rest = list(words)
    ctx = click.Context(main)
    # Options of the group before the subcommand (`memd --home DIR install`).
    while rest:
        word = rest[0]
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text(tuple(path))):
                problems.append(
                    f"`{flag}` is not in `memd {' '.join(path)} --help`".replace("  ", " ")
                )
            rest.pop(0)
            if "=" not in word and takes_value(command, flag) and rest:
                rest.pop(0)
            continue
        if isinstance(command, click.Group):
            sub = command.get_command(ctx, word)
            if sub is None:
                problems.append(f"`memd {' '.join([*path, word])}`: no such command")
                return problems
            command, path = sub, [*path, word]
            rest.pop(0)
            continue
        break
    for word in rest:
        if word.startswith("--"):
            flag = word.split("=", 1)[0]
            if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text(tuple(path))):
                problems.append(f"`{flag}` is not in `memd {' '.join(path)} --help`")
    return problems


def examples() -> list[tuple[str, str, list[str]]]:
    out = []
    for doc in DOCS:
        for line in code_lines(doc.read_text()):
            if line.startswith(OUTPUT):
                continue
            for words in commands(line):
                if words:
                    out.append((doc.relative_to(ROOT).as_posix(), line.strip(), words))
    return out


def test_every_memd_example_matches_the_cli() -> None:
    found = examples()
    assert len(found) > 100  # the parser still finds the examples
    problems = [f"{doc}: `{line}`: {p}" for doc, line, words in found for p in check(words)]
    assert not problems, "\n".join(problems)


def test_the_checker_catches_a_wrong_flag_and_a_wrong_command() -> None:
    assert check(["search", "deploy", "--explain"]) == []
    assert check(["--home", "DIR", "install", "--hooks"]) == []
    assert check(["jobs", "run", "dedupe", "--json"]) == []
    assert check(["search", "deploy", "--bogus-flag"]) == [
        "`--bogus-flag` is not in `memd search --help`"
    ]
    assert check(["sync", "launch"]) == ["`memd sync launch`: no such command"]
    assert commands("memd pin ID | memd unpin ID") == [["pin", "ID"], ["unpin", "ID"]]
    assert commands("memd restore --project DIR | --session ID") == [
        ["restore", "--project", "DIR", "--session", "ID"]
    ]
    assert commands("launchctl list | grep memd") == []
    assert commands("MEMD_DISABLE=1 memd status --json") == [["status", "--json"]]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    text = FENCE.sub("", doc.read_text())
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists() or (path.suffix == ".md" and anchor and anchor not in anchors(path)):
            missing.append(target)
    assert not missing, f"{doc.name}: {missing}"


def test_readme_and_benchmarks_stay_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
    bench = (ROOT / "BENCHMARKS.md").read_text().splitlines()
    assert len(bench) <= 150
    rows = [r for r in bench if r.startswith("| ") and not r.startswith("| target")]
    assert rows
    for row in rows:
        assert len(row) <= 400, row
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", row) and "`" in row, row  # date and command


def test_the_quick_start_is_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1]
    block = FENCE.search(quick)
    assert block is not None
    lines = [line.split("#")[0].strip() for line in block.group(0).splitlines()[1:-1]]
    assert lines == ["make serve", "make test"]
