"""The tech stack a segment's tool calls and stack statements show: "Project uses <name as
written>"; what the project files it read state; lint failures it fixed by a suppression.
(Commands that worked and edited files are read by :mod:`memd.extract.records`.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memd.extract import vocabulary as vocab
from memd.extract.lintfixes import LintFixes
from memd.extract.manifests import PROJECT_FILE, project_file_facts
from memd.extract.rules import IMPORTANCE, STACK_SAID, is_tentative
from memd.models import Candidate, ToolCall, Turn

_PATH = re.compile(r"(?:[\w.~-]*/)*[\w.-]+\.[A-Za-z0-9]{1,8}\b|(?:[\w.-]+/)+[\w.-]+")
_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "str_replace_based_edit_tool"}
_READ_TOOLS = {"Read", "NotebookRead", "View"}
_SHELL_TOOLS = {"Bash", "bash", "Shell", "BashOutput"}
_CMD_PREFIX = re.compile(
    r"^(?:\$\s*|cd\s+\S+\s*&&\s*|(?:(?!GOOS=|GOARCH=)[A-Z_][A-Z0-9_]*=\S+\s+)+|sudo\s+"
    r"|(?:do|then|else|exec)\s+)+"
)


def tool_path(summary: str) -> str | None:
    s = summary.strip()
    for prefix in ("file_path:", "path:", "notebook_path:"):
        if s.startswith(prefix):
            s = s[len(prefix) :].strip()
    m = _PATH.search(s)
    return m.group(0) if m else None


def relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def shell_commands(summary: str) -> list[str]:
    """The commands in a shell tool summary: ``cd x && pytest -q | tail`` -> ``["pytest -q"]``;
    the variables set before a command are dropped, but for the platform it builds for
    (``GOOS=windows go build ./...``)."""
    s = summary.strip()
    if s.startswith("command:"):
        s = s[len("command:") :].strip()
    out = []
    for part in re.split(r"\s*(?:&&|\|\||;|\n)\s*", s):
        part = _CMD_PREFIX.sub("", part.split(" | ")[0]).strip()
        part = re.sub(r"\s+\d?>+\s*\S+|\s+2>&1", "", part).strip()
        if part and not part.startswith(("cd ", "echo ", "#")):
            out.append(part[:120])
    return out


@dataclass
class Evidence:
    """What a segment's tool calls show, gathered in one pass: the tech the project uses, the
    project files read (:mod:`memd.extract.manifests`), lint failures fixed by a suppression
    (:mod:`memd.extract.lintfixes`).

    Only what a turn shows is kept: a tech name as the turn writes it (in a command it ran, a
    path it edited inside the project, or a stack statement), never a role or purpose.
    """

    tech: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    reads: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """The reads of each manifest or configuration file in order: text, the turn's uuid."""
    lint: LintFixes = field(default_factory=LintFixes)

    def see_tech(self, name: str, shown: str, uuid: str) -> None:
        _, uuids = self.tech.setdefault(name, (shown, []))
        if uuid not in uuids:
            uuids.append(uuid)

    def see_names(self, names: list[str], text: str, uuid: str) -> None:
        for name in names:
            shown = vocab.shown_name(name, text)
            if shown:
                self.see_tech(name, shown, uuid)

    def see_turn_call(self, turn: Turn, tool: ToolCall) -> None:
        """A tool call of ``turn``: an edited or read path inside the project, a command run."""
        if tool.name in _EDIT_TOOLS or tool.name in _READ_TOOLS:
            path = tool_path(tool.summary)
            rel = relative(path, turn.cwd) if path else ""
            if not rel or rel.startswith(("/", "~", "..")):
                return  # outside the project: says nothing about it
            self.see_names(vocab.tech_of_path(rel), rel, turn.uuid)
            self.see_read(turn, tool)
            self.lint.see(turn, tool, rel)
        elif tool.name in _SHELL_TOOLS:
            self.lint.see(turn, tool, "")
            if tool.status != "error":
                for cmd in shell_commands(tool.summary):
                    self.see_names(vocab.tech_of_command(cmd), cmd, turn.uuid)

    def see_read(self, turn: Turn, tool: ToolCall) -> None:
        """A read of a manifest or configuration file of the project (whoever read it)."""
        if tool.name == "Read" and tool.status == "ok":
            rel = relative(tool_path(tool.summary) or "", turn.cwd)
            if PROJECT_FILE.search(rel) and not rel.startswith(("/", "~", "..")):
                self.reads.setdefault(rel, []).append((tool.result, turn.uuid))

    def see_statement(self, sentence: str, uuid: str) -> None:
        if STACK_SAID.search(sentence) and not is_tentative(sentence):
            self.see_names(vocab.tech_in_text(sentence), sentence, uuid)


def fact_candidates(ev: Evidence) -> list[Candidate]:
    """Facts phrased from what the turns show: "Project uses <name as written>", and what the
    project files read state (:mod:`memd.extract.manifests`)."""
    return (
        [
            Candidate(
                kind="fact",
                text=f"Project uses {shown}",
                topic="tech stack",
                keywords=[shown],
                importance=IMPORTANCE["fact"],
                source_uuids=uuids[:5],
            )
            for shown, uuids in ev.tech.values()
        ]
        + project_file_facts(ev.reads)
        + ev.lint.candidates()
    )
