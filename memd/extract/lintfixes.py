"""A lint failure fixed by suppressing its rule where it fired, with the reason the edit wrote
beside it: "Lint tparallel failed: `hooks_test.go:442:6: TestX should call t.Parallel on the top
level as well as its subtests (tparallel)`. Fixed with `//nolint:tparallel // Parent uses
t.Chdir() which prevents t.Parallel()` in `cmd/cli/hooks_test.go`."

Only a suppression of a rule the failed run's output names counts, and only once the same
command then succeeds: a new file full of ``//nolint:gosec`` is how code is written, not a fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memd.extract.rules import IMPORTANCE
from memd.models import Candidate, ToolCall, Turn
from memd.names import LINT_TOPIC

SUPPRESSION = re.compile(
    r"(?://|#)\s*nolint:(?P<go>[\w,-]+)|#\s*noqa:\s*(?P<noqa>[\w, ]+)"
    r"|#\s*(?:type|pyright|mypy):\s*ignore\[(?P<py>[\w, -]+)\]|#\s*pylint:\s*disable=(?P<pl>[\w,-]+)"
    r"|eslint-disable(?:-next-line|-line)?\s+(?P<es>[\w@/, -]+)|biome-ignore\s+(?P<bio>[\w/]+)"
    r"|#!?\[allow\((?P<rs>[\w:, ]+)\)\]|rubocop:disable\s+(?P<rb>[\w/, ]+)"
    r"|@SuppressWarnings\(\"?(?P<java>[\w, \"-]+)"
)
"""A line that suppresses a lint rule, and the rules it names."""
MAX_LINE = 200
_EDITS = frozenset({"Edit", "MultiEdit", "Write"})


def suppression_lines(old: str, new: str) -> list[str]:
    """The lines ``new`` adds to ``old`` that suppress a lint rule, as written (at most 3)."""
    before = {line.strip() for line in old.splitlines()}
    out = [
        line.strip()
        for line in new.splitlines()
        if line.strip() not in before and len(line.strip()) <= MAX_LINE and SUPPRESSION.search(line)
    ]
    return list(dict.fromkeys(out))[:3]


def rules_of(line: str) -> list[str]:
    """The rule names a suppression line names ("tparallel", "E501", "no-explicit-any")."""
    out: list[str] = []
    for m in SUPPRESSION.finditer(line):
        named = next((g for g in m.groups() if g), "")
        out += [r.strip(' "').rsplit("/", 1)[-1] for r in re.split(r"[,\s]+", named)]
    return [r for r in out if len(r) >= 3]


@dataclass
class _Fix:
    rule: str
    symptom: str
    line: str
    path: str
    command: str
    uuids: list[str]


@dataclass
class LintFixes:
    """Failed runs, suppressions of the rules they named, and the runs that then passed."""

    failed: dict[str, tuple[str, str]] = field(default_factory=dict)
    pending: list[_Fix] = field(default_factory=list)
    fixes: list[_Fix] = field(default_factory=list)

    def see(self, turn: Turn, call: ToolCall, path: str) -> None:
        """A call of the main agent, in order; ``path`` is an edit's, relative to the project."""
        if call.name == "Bash":
            command = str(call.args.get("command") or "")
            if call.status == "error":
                self.failed[command] = (call.result, turn.uuid)
            elif call.status == "ok":
                for fix in [f for f in self.pending if f.command == command]:
                    self.pending.remove(fix)
                    if not any((f.rule, f.path) == (fix.rule, fix.path) for f in self.fixes):
                        self.fixes.append(fix)
                        fix.uuids.append(turn.uuid)
                self.failed.pop(command, None)
        elif call.name in _EDITS and call.status == "ok":
            for line in call.args.get("suppressed") or []:
                for rule in rules_of(str(line)):
                    for command, (output, uuid) in self.failed.items():
                        symptom = _symptom(output, rule)
                        if symptom:
                            self.pending.append(
                                _Fix(rule, symptom, str(line), path, command, [uuid, turn.uuid])
                            )

    def candidates(self) -> list[Candidate]:
        out = []
        for fix in self.fixes:
            text = (
                f"Lint {fix.rule} failed: `{fix.symptom}`. Fixed with `{fix.line}` in `{fix.path}`."
            )
            out.append(
                Candidate(
                    kind="bugfix",
                    text=text,
                    topic=LINT_TOPIC,
                    keywords=[fix.rule, fix.path.rsplit("/", 1)[-1]],
                    importance=IMPORTANCE["bugfix"],
                    source_uuids=list(dict.fromkeys(fix.uuids)),
                    origin="work",
                )
            )
        return out


def _symptom(output: str, rule: str) -> str:
    """The line of a failed run's output that names ``rule`` as the one that fired."""
    named = re.compile(rf"(?<![\w-]){re.escape(rule)}(?![\w-])")
    for line in output.splitlines():
        line = re.sub(r"^\s*\[[\w:.-]+\]\s*", "", line).strip()  # "[lint:go] " of a task runner
        if named.search(line) and re.search(r":\d+", line) and len(line) > len(rule) + 10:
            return line[:MAX_LINE]
    return ""
