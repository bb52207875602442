"""End to end: a real `memd serve` on a real socket, driven the way Claude Code and a user do."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import (
    MEMD,
    DaemonProcess,
    daemon_env,
    remove_socket_dir,
    served,
    short_socket_path,
)

from memd import protocol
from memd.embedding.models import MINILM_MODEL

BILLING_PROMPT = "Which database holds the billing invoices?"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("daemon")
    # The hook's relevance threshold (0.35) is a MiniLM cosine: these tests pin that model.
    with served(root, MEMD_FLUSH_SECONDS="0.3", MEMD_EMBEDDING_MODEL=MINILM_MODEL) as proc:
        seed(proc, root)
        yield proc
    assert "memd stopped" in proc.log()


def project(root: Path, name: str) -> str:
    path = root / name
    (path / ".git").mkdir(parents=True, exist_ok=True)
    (path / "src" / "deep").mkdir(parents=True, exist_ok=True)
    return str(path)


def seed(proc: DaemonProcess, root: Path) -> None:
    a, b = project(root, "alpha"), project(root, "beta")
    # The way a user adds memories: `memd add --project` (which goes through the daemon).
    out = proc.memd(
        "add",
        "--project",
        a,
        "--kind",
        "decision",
        "The billing service stores its invoices in PostgreSQL 16.",
    )
    assert out.returncode == 0, out.stderr
    out = proc.memd(
        "add",
        "--project",
        b,
        "--kind",
        "decision",
        "The billing service in this repository keeps invoices in MongoDB.",
    )
    assert out.returncode == 0, out.stderr
    more: list[dict[str, Any]] = [
        {
            "project": a,
            "kind": "fact",
            "pin": True,
            "text": "Run the test suite with make check; it starts a local Redis first.",
        },
        {
            "project": a,
            "kind": "todo",
            "text": "TODO: migrate the nightly export cron job to a systemd timer.",
        },
        {
            "project": a,
            "kind": "bugfix",
            "text": "Fixed the websocket reconnect race by serializing reconnect attempts.",
        },
        {
            "project": a,
            "kind": "summary",
            "text": "Last session added pagination to the invoices API endpoint.",
        },
        {
            "project": b,
            "kind": "fact",
            "text": "Websocket reconnects in this project are handled by the socket.io client.",
        },
        {
            "project": "user:global",
            "kind": "preference",
            "text": "The user prefers short answers without emojis.",
        },
    ]
    for m in more:
        reply = proc.request({"cmd": "add", **m})
        assert reply["ok"], reply
    proc.projects = (a, b)  # type: ignore[attr-defined]


def prompt(
    proc: DaemonProcess, cwd: str, text: str, session: str
) -> subprocess.CompletedProcess[str]:
    payload = {
        "session_id": session,
        "transcript_path": "/nonexistent/t.jsonl",
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }
    out = proc.hook("user-prompt-submit", payload)
    if out.stdout:  # Claude Code's JSON form: the context is its additionalContext
        reply = json.loads(out.stdout)["hookSpecificOutput"]
        assert reply["hookEventName"] == "UserPromptSubmit"
        out.stdout = reply["additionalContext"]
    return out


def test_status_json_reports_health(daemon: DaemonProcess) -> None:
    out = daemon.memd("status", "--json")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["running"] is True
    assert s["pid"] == daemon.proc.pid  # type: ignore[union-attr]
    assert s["version"]
    assert s["socket"] == daemon.socket
    assert s["memories"]["total"] >= 8
    assert set(s["memories"]["by_kind"]) >= {"decision", "fact", "todo", "preference"}
    assert len(s["memories"]["by_project"]) == 3
    assert {"pending", "extracted"} <= set(s["sessions"])
    for job in s["jobs"]:
        assert {"name", "next_run", "last_run", "last_status"} <= set(job)
    assert {"backend", "calls", "tokens", "failures"} <= set(s["extractor"])
    assert s["extractor"]["backend"] == "heuristic"
    for key in ("watched_files", "bytes_ingested", "extraction_lag_seconds", "last_errors"):
        assert key in s


def test_status_human(daemon: DaemonProcess) -> None:
    out = daemon.memd("status")
    assert out.returncode == 0, out.stderr
    assert "running, pid" in out.stdout
    assert daemon.socket in out.stdout


def test_prompt_hook_injects_this_projects_memories_only(daemon: DaemonProcess) -> None:
    a, b = daemon.projects  # type: ignore[attr-defined]
    out = prompt(daemon, a, BILLING_PROMPT, "sess-a")
    assert out.returncode == 0
    assert out.stdout.startswith("<memd-context>")
    assert out.stdout.rstrip().endswith("</memd-context>")
    assert "may be outdated" in out.stdout and "this conversation wins" in out.stdout
    assert "PostgreSQL 16" in out.stdout
    assert "MongoDB" not in out.stdout
    assert "haiku" not in out.stdout

    out = prompt(daemon, b, BILLING_PROMPT, "sess-b")
    assert "MongoDB" in out.stdout
    assert "PostgreSQL" not in out.stdout


def test_prompt_hook_resolves_a_subdirectory_to_its_git_root(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    out = prompt(daemon, os.path.join(a, "src", "deep"), BILLING_PROMPT, "sess-sub")
    assert "PostgreSQL 16" in out.stdout


def test_same_session_gets_a_memory_once(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    first = prompt(daemon, a, BILLING_PROMPT, "sess-dedupe")
    assert "PostgreSQL 16" in first.stdout
    again = prompt(daemon, a, "Remind me: which database stores billing invoices?", "sess-dedupe")
    assert again.returncode == 0
    assert "PostgreSQL" not in again.stdout
    other = prompt(daemon, a, BILLING_PROMPT, "sess-dedupe-2")
    assert "PostgreSQL 16" in other.stdout


def test_irrelevant_prompt_injects_nothing(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    out = prompt(daemon, a, "Write a haiku about autumn leaves falling in Kyoto.", "sess-haiku")
    assert out.returncode == 0
    assert out.stdout == ""
    assert out.stderr == ""


def test_user_wide_preference_reaches_every_project(daemon: DaemonProcess) -> None:
    _, b = daemon.projects  # type: ignore[attr-defined]
    out = prompt(daemon, b, "Should answers be short, and are emojis fine?", "sess-pref")
    assert "short answers without emojis" in out.stdout


def test_session_start_brief(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    payload = {
        "session_id": "sess-start",
        "cwd": a,
        "source": "startup",
        "hook_event_name": "SessionStart",
        "transcript_path": "/x.jsonl",
    }
    out = daemon.hook("session-start", payload)
    assert out.returncode == 0
    text = out.stdout
    assert text.startswith("<memd-context>")
    assert "Pinned:" in text and "make check" in text
    assert "Open TODOs:" in text and "systemd timer" in text
    assert "Decisions:" in text and "PostgreSQL 16" in text
    assert "Last session:" in text and "pagination" in text
    assert "short answers without emojis" in text
    assert "MongoDB" not in text and "socket.io" not in text
    assert len(text) <= 2500
    # The same session resumed gets nothing new; a /clear starts over.
    assert daemon.hook("session-start", {**payload, "source": "resume"}).stdout == ""
    assert "make check" in daemon.hook("session-start", {**payload, "source": "clear"}).stdout


def test_malformed_hook_input_prints_nothing(daemon: DaemonProcess) -> None:
    for bad in ("{not json", "[1, 2, 3]", '"a string"', "\x00\x01garbage", ""):
        out = daemon.hook("user-prompt-submit", bad)
        assert out.returncode == 0
        assert out.stdout == "" and out.stderr == ""
    assert daemon.request({"cmd": "ping"})["ok"]


def test_stop_and_session_end_only_notify(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    payload = {
        "session_id": "sess-end",
        "cwd": a,
        "transcript_path": "/nonexistent.jsonl",
        "reason": "prompt_input_exit",
        "stop_hook_active": False,
    }
    for event in ("stop", "session-end"):
        started = time.monotonic()
        out = daemon.hook(event, payload)
        assert out.returncode == 0 and out.stdout == ""
        assert time.monotonic() - started < 1.5
    assert daemon.request({"cmd": "ping"})["ok"]


def test_injection_updates_hits_in_batch(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    text = "Fixed the websocket reconnect race"
    out = prompt(daemon, a, "Why did the websocket reconnect race happen?", "sess-hits")
    assert text in out.stdout
    found = daemon.request({"cmd": "search", "query": "websocket reconnect race", "cwd": a})
    memory_id = next(r["id"] for r in found["results"] if text in r["text"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        shown = daemon.request({"cmd": "show", "id": memory_id})["memory"]
        if shown["hits"] >= 1:
            break
        time.sleep(0.2)
    assert shown["hits"] >= 1
    assert shown["last_used_at"]


def test_search_over_the_socket_has_the_documented_shape(daemon: DaemonProcess) -> None:
    a, _ = daemon.projects  # type: ignore[attr-defined]
    reply = daemon.request({"cmd": "search", "query": "billing invoices", "cwd": a, "limit": 5})
    assert reply["ok"]
    top = reply["results"][0]
    for key in (
        "id",
        "text",
        "kind",
        "project",
        "score",
        "pinned",
        "created_at",
        "score_breakdown",
        "sources",
    ):
        assert key in top
    assert {"semantic", "lexical", "recency", "importance", "total"} <= set(top["score_breakdown"])
    assert all(r["project"] in (a, "user:global") for r in reply["results"])
    ctx = daemon.request({"cmd": "context", "cwd": a, "prompt": BILLING_PROMPT})
    assert "PostgreSQL 16" in ctx["context"]
    assert ctx["chosen"] and "semantic" in ctx["chosen"][0]["why"]


def test_concurrent_clients_are_all_answered(daemon: DaemonProcess) -> None:
    a, b = daemon.projects  # type: ignore[attr-defined]
    replies: list[dict[str, Any]] = []
    failures: list[BaseException] = []

    def client(n: int) -> None:
        try:
            cwd = a if n % 2 else b
            payload = {"session_id": f"conc-{n}", "cwd": cwd, "prompt": BILLING_PROMPT}
            reply = daemon.request(
                {"cmd": "hook", "event": "user-prompt-submit", "payload": payload}, timeout=30
            )
            replies.append({"n": n, **reply})
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures
    assert len(replies) == 50
    for r in replies:
        assert r["ok"]
        expected = "PostgreSQL" if r["n"] % 2 else "MongoDB"
        assert expected in r["context"]


def test_second_instance_is_refused(daemon: DaemonProcess) -> None:
    out = subprocess.run(
        [MEMD, "serve"], env=daemon.env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 3
    assert "already running" in out.stderr
    assert daemon.request({"cmd": "ping"})["ok"]
    # (Another daemon on the same socket path with another home: see test_server's
    # test_stale_socket_rules; a live socket is never removed.)


def test_status_when_not_running(tmp_path: Path) -> None:
    sock = short_socket_path()
    try:
        env = daemon_env(tmp_path, sock)
        out = subprocess.run(
            [MEMD, "status", "--json"], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 1
        assert json.loads(out.stdout)["running"] is False
        out = subprocess.run([MEMD, "status"], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 1
        assert "not running" in out.stdout
    finally:
        remove_socket_dir(sock)


def dead_socket(path: str) -> None:
    """A socket file nobody listens on: what a crash (kill -9) leaves behind."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()


def test_stale_socket_is_replaced_and_sigint_stops_gracefully(tmp_path: Path) -> None:
    sock = short_socket_path()
    try:
        dead_socket(sock)
        proc = DaemonProcess(daemon_env(tmp_path, sock), tmp_path / "serve.log").start()
        assert oct(os.stat(sock).st_mode & 0o777) == "0o600"
        assert oct(os.stat(os.path.dirname(sock)).st_mode & 0o777) == "0o700"
        assert proc.request({"cmd": "ping"})["ok"]
        # An idle client must not hold up the shutdown. (The module daemon stops with SIGTERM.)
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        idle.connect(sock)
        started = time.monotonic()
        code = proc.stop(signal.SIGINT)
        idle.close()
        assert code == 0, proc.log()
        assert time.monotonic() - started < 20
        assert not os.path.exists(sock)
        assert "memd stopped" in proc.log()
    finally:
        remove_socket_dir(sock)


def test_socket_protocol_request_roundtrip(daemon: DaemonProcess) -> None:
    reply = protocol.request(daemon.socket, {"cmd": "jobs"}, timeout=10)
    assert reply["ok"]
    assert {j["name"] for j in reply["jobs"]} >= {"decay", "optimize"}


def test_ingest_is_handed_to_the_daemon(
    daemon: DaemonProcess, fixture_root: Path, tmp_path: Path
) -> None:
    """Last in this file: it adds memories from a real transcript to the shared daemon."""
    name = "daaain-claude-code-log__03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
    copy = tmp_path / name
    copy.write_bytes((fixture_root / "fixtures" / "transcripts" / name).read_bytes())
    out = daemon.memd("ingest", str(copy), "--json")
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)
    assert first["via"] == "daemon"
    assert first["sessions"] >= 1 and first["turns"] >= 1
    again = json.loads(daemon.memd("ingest", str(copy), "--json").stdout)
    assert again["turns"] == 0 and again["memories_added"] == 0
    status = daemon.request({"cmd": "status"})
    assert status["sessions"]["extracted"] >= first["segments_extracted"] >= 1
    assert status["extractor"]["backend"] == "heuristic"
    assert status["extractor"]["calls"] >= first["segments_extracted"]
    assert status["memories"]["total"] >= 8 + first["memories_added"]
