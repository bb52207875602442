"""A lint failure fixed by suppressing the rule that fired, read from a real transcript's tool
records: the failed run, the edit that added the suppression, the same run passing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memd.extract.heuristic import HeuristicExtractor
from memd.extract.lintfixes import rules_of, suppression_lines
from memd.ingest.transcript import parse_lines
from memd.models import Segment

CWD = "/home/dev/cli"
LINT = "mise run lint 2>&1 | tail -30"
FAILED = (
    "Exit code 1\n[lint:go] ERROR task failed\n"
    "[lint:go] cmd/cli/hooks_test.go:442:6: TestInstallHooks should call t.Parallel on the top "
    "level as well as its subtests (tparallel)\n[lint:go] 1 issues:\n[lint:go] * tparallel: 1"
)
SUPPRESS = "//nolint:tparallel // Parent uses t.Chdir() which prevents t.Parallel()"


@pytest.mark.parametrize(
    ("line", "rules"),
    [
        ("//nolint:errcheck,gosec // best effort", ["errcheck", "gosec"]),
        ("x = f(y)  # noqa: E501", ["E501"]),
        ("return cast(x)  # type: ignore[arg-type]", ["arg-type"]),
        ("// eslint-disable-next-line @typescript-eslint/no-explicit-any", ["no-explicit-any"]),
        ("#[allow(clippy::too_many_arguments)]", ["clippy::too_many_arguments"]),
        ("# the nolint comment below explains it", []),
    ],
)
def test_the_rules_a_suppression_names(line: str, rules: list[str]) -> None:
    assert rules_of(line) == rules


def test_only_the_suppressions_an_edit_adds() -> None:
    old = "func a() {} //nolint:gosec // old\nfunc b() {}"
    new = f"func a() {{}} //nolint:gosec // old\n{SUPPRESS}\nfunc b() {{}}"
    assert suppression_lines(old, new) == [SUPPRESS]


class Session:
    """Claude Code transcript lines: assistant tool calls and their results."""

    def __init__(self) -> None:
        self.n = 0
        self.lines: list[dict[str, Any]] = [self._line("user", "u0", "Run the linters and fix.")]

    def _line(self, role: str, uid: str, content: Any) -> dict[str, Any]:
        self.n += 1
        message: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            message["id"] = f"m{self.n}"
        return {"type": role, "uuid": uid, "sessionId": "s1", "cwd": CWD,
                "timestamp": f"2026-11-10T10:00:{self.n:02d}Z", "message": message}  # fmt: skip

    def call(self, name: str, tool_input: dict[str, Any], result: str, error: bool = False) -> None:
        tid = f"t{self.n}"
        use = {"type": "tool_use", "id": tid, "name": name, "input": tool_input}
        self.lines.append(self._line("assistant", f"a{self.n}", [use]))
        back = {"type": "tool_result", "tool_use_id": tid, "content": result, "is_error": error}
        self.lines.append(self._line("user", f"r{self.n}", [back]))

    def bugfixes(self) -> list[str]:
        self.lines.append(
            self._line("assistant", "end", [{"type": "text", "text": "Lint is clean."}])
        )
        turns = parse_lines(json.dumps(line) for line in self.lines)
        segment = Segment(session_id="s1", project=CWD, turns=turns, reason="session-end")
        return [c.text for c in HeuristicExtractor().extract(segment) if c.text.startswith("Lint ")]


def edit(session: Session, new: str) -> None:
    path = f"{CWD}/cmd/cli/hooks_test.go"
    old = "func TestInstallHooks(t *testing.T) {"
    session.call("Edit", {"file_path": path, "old_string": old, "new_string": f"{new}\n{old}"},
                 "The file has been updated successfully.")  # fmt: skip


def test_a_failed_lint_run_a_suppression_and_the_run_passing_is_a_bug_fix() -> None:
    s = Session()
    s.call("Bash", {"command": LINT}, FAILED, error=True)
    edit(s, SUPPRESS)
    s.call("Bash", {"command": LINT}, "0 issues.")
    assert s.bugfixes() == [
        "Lint tparallel failed: `cmd/cli/hooks_test.go:442:6: TestInstallHooks should call "
        "t.Parallel on the top level as well as its subtests (tparallel)`. Fixed with "
        f"`{SUPPRESS}` in `cmd/cli/hooks_test.go`."
    ]


def test_no_fix_when_the_run_fails_again_or_the_rule_never_fired() -> None:
    again = Session()
    again.call("Bash", {"command": LINT}, FAILED, error=True)
    edit(again, SUPPRESS)
    again.call("Bash", {"command": LINT}, FAILED, error=True)
    assert again.bugfixes() == []
    other = Session()
    other.call("Bash", {"command": LINT}, FAILED, error=True)
    edit(other, "//nolint:gosec // path is built from constants")
    other.call("Bash", {"command": LINT}, "0 issues.")
    assert other.bugfixes() == []
