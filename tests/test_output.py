"""Output for people (#32): `memd show` tells the history as a timeline (`--json` for machines),
`memd add` infers the kind and says so, an unknown config key gets a suggestion, and `memd
stats` lists as "most used" only memories that were used. Through a real daemon."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProcess, served


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with served(tmp_path_factory.mktemp("output")) as proc:
        yield proc


@pytest.fixture(scope="module")
def repo(daemon: DaemonProcess) -> str:
    path = daemon.root / "shop"  # type: ignore[attr-defined]
    (path / ".git").mkdir(parents=True)
    return str(path)


def ok(run: Any) -> str:
    assert run.returncode == 0, (run.stdout, run.stderr)
    return str(run.stdout)


def add(daemon: DaemonProcess, repo: str, *args: str) -> dict[str, Any]:
    return dict(json.loads(ok(daemon.memd("add", *args, "--json", cwd=repo))))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("TODO: write the release notes for 2.0", "todo"),
        ("We need to rotate the staging certificates", "todo"),
        ("We decided to keep invoices in PostgreSQL 16", "decision"),
        ("Always run make check before pushing", "preference"),
        ("Use pnpm, never npm", "preference"),
        ("Fixed the flaky login test: the root cause was a race on the session cookie", "bugfix"),
        ("Finished the migration of the billing jobs to Celery", "progress"),
        ("The cache is Redis 7 on port 6380", "fact"),
        ("待办：给支付模块补集成测试", "todo"),
        ("我们决定用 PostgreSQL 存发票", "decision"),
        ("不要在生产环境用 npm", "preference"),
    ],
)
def test_add_infers_the_kind_and_says_so(
    daemon: DaemonProcess, repo: str, text: str, kind: str
) -> None:
    out = ok(daemon.memd("add", text, cwd=repo))
    first, second = out.splitlines()[:2]
    assert first.startswith("added ") and f" {kind:<10} {text}" in first
    assert second == f"kind: {kind}, inferred from the text (--kind sets another)"
    shown = json.loads(ok(daemon.memd("show", first.split()[1], "--json")))
    assert shown["kind"] == kind


def test_an_explicit_kind_wins_and_is_not_called_inferred(daemon: DaemonProcess, repo: str) -> None:
    out = ok(
        daemon.memd("add", "TODO: this is a fact about a TODO list", "--kind", "fact", cwd=repo)
    )
    assert " fact " in out.splitlines()[0] and "inferred" not in out
    reply = add(daemon, repo, "TODO: check the nightly backups")
    assert reply["memory"]["kind"] == "todo" and reply["kind_inferred"] is True


def test_show_tells_the_history_as_a_timeline(daemon: DaemonProcess, repo: str) -> None:
    mid = add(daemon, repo, "The search index is rebuilt nightly by cron")["memory"]["id"]
    edited = daemon.request(
        {"cmd": "edit", "id": mid, "text": "The search index is rebuilt nightly at 02:00 by cron"}
    )
    assert edited["ok"], edited
    ok(daemon.memd("forget", mid))
    ok(daemon.memd("restore", mid))
    out = ok(daemon.memd("show", mid[:8]))
    assert "{" not in out and '"at"' not in out  # no raw JSON
    timeline = out.split("  history:\n")[1].splitlines()
    events = [line[4 + 16 + 2 :] for line in timeline]  # indent, the time column, two spaces
    assert events == [
        "created",
        "edited; before: text “The search index is rebuilt nightly by cron”",
        "archived: forgotten by hand",
        "restored (was archived): restored by id",
    ], timeline
    assert all(line[4:8].isdigit() and line[8] == "-" for line in timeline)  # dates first
    machine = json.loads(ok(daemon.memd("show", mid, "--json")))
    assert [h.get("by") for h in machine["history"]] == ["edit", "hand", "hand"]


def test_an_unknown_config_key_gets_a_suggestion(daemon: DaemonProcess, tmp_path: Path) -> None:
    config = tmp_path / "memd.toml"
    for text, hint in (
        ("serach_limit = 5\n", "did you mean 'search_limit'?"),
        ("Prompt-Budget-Chars = 900\n", "did you mean 'prompt_budget_chars'?"),
        ("colour = 'blue'\n", "`memd config --example` lists every setting"),
    ):
        config.write_text(text)
        run = daemon.memd("--config", str(config), "config")
        assert run.returncode == 1 and hint in run.stderr, run.stderr
        assert run.stderr.count("\n") == 1


def test_stats_lists_only_used_memories_as_most_used(daemon: DaemonProcess, tmp_path: Path) -> None:
    other = tmp_path / "stats-project"
    (other / ".git").mkdir(parents=True)
    rows = [{"text": "The used memory about the payments gateway", "hits": 4}]
    rows += [{"text": f"An unused memory number {i} about the mailer"} for i in range(3)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok(daemon.memd("import", str(path), cwd=str(other)))
    data = json.loads(ok(daemon.memd("stats", "--json")))
    assert [m["hits"] for m in data["most_used"]] == [4]
    out = ok(daemon.memd("stats"))
    most = out.split("most used:\n")[1].split("least used:")[0]
    assert "payments gateway" in most and "unused memory" not in most
