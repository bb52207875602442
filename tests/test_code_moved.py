"""Memories that know when the code moved (#33): a real daemon on a real socket checks the
paths and symbols a memory names against the working tree of the prompt's ``cwd``."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_process import DaemonProcess, served

from memd.embedding.models import MINILM_MODEL
from memd.recall.codecheck import CodeCheck
from memd.recall.references import Reference, references
from memd.state import State

LIMITER = """import time


def limit_rate(calls, per_second):
    \"\"\"How long to wait before the next call.\"\"\"
    return max(0.0, calls / per_second - time.monotonic())


class TokenBucket:
    def refill(self, amount):
        self.tokens += amount


def describe_limits():
    return "token bucket"
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    # The hook's relevance threshold is a MiniLM cosine: these tests pin that model.
    with served(
        tmp_path_factory.mktemp("moved"),
        MEMD_FLUSH_SECONDS="0.3",
        MEMD_EMBEDDING_MODEL=MINILM_MODEL,
    ) as proc:
        yield proc


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


def repo_with_limiter(daemon: DaemonProcess, name: str) -> Path:
    repo = daemon.root / name  # type: ignore[attr-defined]
    (repo / "src" / "net").mkdir(parents=True)
    (repo / "src" / "net" / "limiter.py").write_text(LIMITER)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "limiter")
    return repo


def remember(daemon: DaemonProcess, repo: Path, text: str, kind: str = "fact") -> None:
    reply = daemon.request({"cmd": "add", "project": str(repo), "kind": kind, "text": text})
    assert reply["ok"], reply


def ask(daemon: DaemonProcess, cwd: Path, prompt: str) -> str:
    """The block a fresh session's prompt gets."""
    payload = {
        "session_id": uuid.uuid4().hex,
        "transcript_path": "/nonexistent/t.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    out = daemon.hook("user-prompt-submit", payload)
    assert out.returncode == 0, out.stderr
    if not out.stdout:
        return ""
    return str(json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"])


def line_of(block: str, words: str) -> str:
    lines = [line for line in block.splitlines() if words in line]
    assert lines, block
    return lines[0]


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def test_a_renamed_file_is_shown_at_its_new_place(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "renamed")
    remember(daemon, repo, "The rate limiter of the HTTP client lives in `src/net/limiter.py`.")
    prompt = "Where does the rate limiter of the HTTP client live?"
    assert "[moved" not in line_of(ask(daemon, repo, prompt), "rate limiter")
    (repo / "src" / "limits").mkdir()
    git(repo, "mv", "src/net/limiter.py", "src/limits/mod.py")
    commit_all(repo, "move the limiter")
    line = line_of(ask(daemon, repo, prompt), "rate limiter")
    assert "[moved: now `src/limits/mod.py`]" in line


def test_a_moved_function_names_its_new_file(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "moved")
    remember(daemon, repo, "`limit_rate` in `src/net/limiter.py` computes the wait between calls.")
    prompt = "How is the wait between calls computed by limit_rate?"
    assert "[moved" not in line_of(ask(daemon, repo, prompt), "limit_rate")
    text = (repo / "src" / "net" / "limiter.py").read_text()
    start, end = text.index("def limit_rate"), text.index("class TokenBucket")
    (repo / "src" / "net" / "limiter.py").write_text(text[:start] + text[end:])
    (repo / "src" / "net" / "waits.py").write_text("import time\n\n\n" + text[start:end])
    commit_all(repo, "move limit_rate")
    line = line_of(ask(daemon, repo, prompt), "limit_rate")
    assert "[moved: `limit_rate` now in `src/net/waits.py`]" in line


def test_a_deleted_function_marks_the_memory_possibly_outdated(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "deleted")
    remember(
        daemon, repo, "`TokenBucket.refill` in `src/net/limiter.py` adds tokens to the bucket."
    )
    prompt = "How does refill add tokens to the token bucket?"
    assert "[may be outdated" not in line_of(ask(daemon, repo, prompt), "refill")
    text = (repo / "src" / "net" / "limiter.py").read_text()
    cut = text.replace(
        "    def refill(self, amount):\n        self.tokens += amount\n", "    pass\n"
    )
    (repo / "src" / "net" / "limiter.py").write_text(cut)
    commit_all(repo, "drop refill")
    line = line_of(ask(daemon, repo, prompt), "refill")
    assert "[may be outdated: `refill` no longer in `src/net/limiter.py` (last seen 20" in line


def test_a_changed_definition_says_so(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "changed")
    remember(daemon, repo, "`describe_limits` in `src/net/limiter.py` names the limiting scheme.")
    prompt = "Which limiting scheme does describe_limits name?"
    assert "changed" not in line_of(ask(daemon, repo, prompt), "describe_limits")
    path = repo / "src" / "net" / "limiter.py"
    path.write_text(path.read_text().replace('"token bucket"', '"leaky bucket"'))
    line = line_of(ask(daemon, repo, prompt), "describe_limits")  # not committed: the tree counts
    assert "[`describe_limits` changed since 20" in line


def test_an_unrelated_edit_in_the_same_file_flags_nothing(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "unrelated")
    remember(daemon, repo, "`describe_limits` in `src/net/limiter.py` names the limiting scheme.")
    prompt = "Which limiting scheme does describe_limits name?"
    assert "[" not in line_of(ask(daemon, repo, prompt), "describe_limits").split("scheme.")[-1]
    path = repo / "src" / "net" / "limiter.py"
    text = path.read_text().replace("per_second - time", "per_second * 2 - time")
    path.write_text(text + "\n\ndef burst_size():\n    return 10\n")
    commit_all(repo, "tune the limiter")
    line = line_of(ask(daemon, repo, prompt), "describe_limits")
    assert "[" not in line.split("scheme.")[-1], line


def test_an_event_record_in_a_rewritten_file_is_not_flagged(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "event")
    text = "Fixed the negative wait in `limit_rate` (`src/net/limiter.py`) by clamping it at zero."
    remember(daemon, repo, text, kind="bugfix")
    prompt = "Why can limit_rate not return a negative wait?"
    assert "limit_rate" in ask(daemon, repo, prompt)
    (repo / "src" / "net" / "limiter.py").write_text("def throttle():\n    return 0\n")
    commit_all(repo, "rewrite the limiter")
    line = line_of(ask(daemon, repo, prompt), "limit_rate")
    assert "[moved" not in line and "outdated" not in line and "changed" not in line


def test_a_path_inside_an_agent_worktree_maps_to_the_repository(daemon: DaemonProcess) -> None:
    repo = repo_with_limiter(daemon, "agents")
    agent = repo / ".claude" / "worktrees" / "agent-7"
    remember(
        daemon,
        repo,
        f"The token bucket `TokenBucket.refill` is in `{agent}/src/net/limiter.py`.",
    )
    assert references(
        f"`TokenBucket.refill` is in `{agent}/src/net/limiter.py`.", "fact", str(repo)
    ) == (Reference("src/net/limiter.py", "refill"),)
    prompt = "Where is the token bucket refill?"
    assert "[moved" not in line_of(ask(daemon, repo, prompt), "token bucket")
    # The agent moves the file in its own worktree: its prompts see the move, the main
    # checkout's do not.
    git(repo, "worktree", "add", "-q", str(agent), "-b", "agent-7")
    (agent / "src" / "limits").mkdir()
    git(agent, "mv", "src/net/limiter.py", "src/limits/bucket.py")
    commit_all(agent, "move the bucket")
    line = line_of(ask(daemon, agent / "src", prompt), "token bucket")
    assert "[moved: `refill` now in `src/limits/bucket.py`]" in line
    assert "[moved" not in line_of(ask(daemon, repo, prompt), "token bucket")
    assert os.path.exists(repo / "src" / "net" / "limiter.py")


def test_hub_files_and_passing_mentions_are_not_references() -> None:
    assert references("Updated `CLAUDE.md` and `CHANGELOG.md` for the release.", "fact") == ()
    assert references("See README.md and `.github/workflows/ci.yml`.", "fact") == ()
    listed = "Files changed for CI: `.github/workflows/ci.yml` (continue-on-error)"
    assert references(listed, "fact") == (
        Reference(".github/workflows/ci.yml", "continue-on-error", recorded=True),
    )
    assert references("Fixed `limit_rate` in `src/a.py`.", "bugfix") == ()
    assert references("Chose PostgreSQL over MySQL, see `docs/db.md`.", "decision") == ()


def test_what_memd_never_saw_is_never_reported_gone(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def here_now():\n    return 1\n")
    check = CodeCheck()
    said = "`not_there` in `a.py` and `gone.py` are mentioned in passing."
    for text in (said, "`missing_helper` in `a.py` does it."):
        refs = references(text, "fact", str(tmp_path))
        assert refs and check.check(text, refs, str(tmp_path)) == []


def test_a_name_said_without_its_file_is_flagged_only_when_gone(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def load_config():\n    return {}\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    refs = references("`load_config` reads the settings.", "fact", str(tmp_path))
    assert refs == (Reference("", "load_config"),)
    check = CodeCheck()  # no git here: a bounded walk finds it
    assert check.check("m", refs, str(tmp_path)) == []
    (tmp_path / "b.py").write_text("def load_config():\n    return {}\n")
    (tmp_path / "a.py").write_text("x = 2\n")
    assert check.check("m", refs, str(tmp_path)) == []  # still true, wherever it lives
    (tmp_path / "b.py").write_text("x = 1\n")
    [gone] = check.check("m", refs, str(tmp_path), day="2030-01-02")
    assert gone.text().startswith("may be outdated: `load_config` no longer defined (last seen")


def test_files_are_read_once_per_size_and_mtime(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def one():\n    return 1\n\ndef two():\n    return 2\n")
    check = CodeCheck()
    refs = references("`one` and `two` in `a.py` count.", "fact", str(tmp_path))
    for _ in range(5):
        assert check.check("m", refs, str(tmp_path)) == []
    assert check.tree.reads == 1


def test_names_an_edit_recorded_were_there_when_the_memory_was_made(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text(
        "def connect(host):\n    return open_socket(host, timeout_s=5)\n"
    )
    text = "Files changed for timeouts: `net.py` (limit_rate, timeout_s, connect)"
    refs = references(text, "fact", str(tmp_path))
    assert [r.symbol for r in refs] == ["limit_rate", "timeout_s", "connect"]
    assert all(r.recorded for r in refs)
    # limit_rate was written by the session and is gone before the first recall; timeout_s
    # (a keyword argument the edit added) is still used: not gone.
    [gone] = CodeCheck().check("m", refs, str(tmp_path), "2026-11-02")
    assert (
        gone.text() == "may be outdated: `limit_rate` no longer in `net.py` (last seen 2026-11-02)"
    )


def test_a_search_out_of_time_gives_no_mark_and_is_tried_again(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def load_config():\n    return {}\n")
    refs = references("`load_config` in `a.py` reads the settings.", "fact", str(tmp_path))
    check = CodeCheck()
    assert check.check("m", refs, str(tmp_path)) == []
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("def load_config():\n    return {}\n")
    assert check.check("m", refs, str(tmp_path), until=time.monotonic() - 1) == []
    [moved] = check.check("m", refs, str(tmp_path))
    assert moved.text() == "moved: `load_config` now in `b.py`"


def test_what_was_seen_survives_a_restart(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def load_config():\n    return {}\n")
    refs = references("`load_config` in `a.py` reads the settings.", "fact", str(tmp_path))
    state = State(tmp_path / "state.db")
    try:
        before = CodeCheck(state)
        assert before.check("m", refs, str(tmp_path), day="2026-11-02") == []
        before.sightings.persist()
        (tmp_path / "a.py").write_text("def load_config():\n    return {'debug': True}\n")
        [changed] = CodeCheck(state).check("m", refs, str(tmp_path))
        assert changed.text() == "`load_config` changed since 2026-11-02"
    finally:
        state.close()


def test_a_project_whose_tree_is_not_here_is_not_checked(tmp_path: Path) -> None:
    """Defect: a memory of a project checked out on another machine (a cwd that does not exist
    here) was marked "may be outdated: `connect` no longer in `net.py`" for each name an edit
    recorded, since a missing tree mentions nothing."""
    from hitdata import hit

    text = "Files changed for timeouts: `net.py` (limit_rate, connect)"
    away = str(tmp_path / "elsewhere")
    assert CodeCheck().marker(away)(hit({"id": "m", "text": text, "project": away})) == ""
    here = tmp_path / "here"
    here.mkdir()
    (here / "net.py").write_text("def other():\n    return 1\n")
    marked = CodeCheck().marker(str(here))(hit({"id": "m", "text": text, "project": str(here)}))
    assert "no longer in `net.py`" in marked
