"""Redaction: the corpus of realistic tool output, each secret shape, and what must survive."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path
from redaction_corpus import NON_SECRETS, load_corpus, scan_tree

from memd.errors import ConfigError
from memd.extract.redact import redact, redact_turn
from memd.models import ToolCall, Turn

CORPUS = load_corpus()


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 10
    assert sum(len(secrets) for _, secrets in CORPUS) >= 30


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_no_secret_survives(index: int) -> None:
    text, secrets = CORPUS[index]
    out = redact(text)
    for secret in secrets:
        assert secret in text
        assert secret not in out, f"secret survived: {secret[:12]}…"
    assert "[REDACTED:" in out


def test_corpus_keeps_the_non_secret_context() -> None:
    out = "\n".join(redact(text) for text, _ in CORPUS)
    for keep in (
        "0b3c5e0e-6f1c-4d8a-9a57-1f2b3c4d5e6f",
        "15b63a3c6be9f62530bdb5d47ccfcc001f8a7837",
        "/home/dev/projects/shop-api/src/shop_api/settings.py",
        "git@github.com:acme/shop-api.git",
        "@github.com/acme/shop-api.git (fetch)",
        "PWD=/home/dev/projects/shop-api",
        "max_tokens=4096",
        '"token_type": "Bearer"',
        "问题出在端口：容器映射的是 3307。",
        "AWS_REGION=eu-west-1",
        "token = token or os.environ",
    ):
        assert keep in out, keep


@pytest.mark.parametrize("text", NON_SECRETS)
def test_non_secrets_survive(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    for text, _ in CORPUS:
        once = redact(text)
        assert redact(once) == once


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key id AKIAQWERTYUIOPASDF27 in use", "aws_access_key_id"),
        ("aws_secret_access_key = Zx9/QwErTy1234UiOpAsDfGhJkL+ZxCvBnM5678", "secret"),
        ("token ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", "github_token"),
        ("github_pat_11ABCDEFG0" + "x" * 12 + "_" + "Yz9" * 20, "github_token"),
        ("sk-ant-api03-" + "Ab3_" * 20 + "AA", "anthropic_key"),
        ("sk-" + "Ab3De5" * 8, "openai_key"),
        ("sk-proj-" + "Ab3-De5_" * 8, "openai_key"),
        ("xoxb-123456789012-123456789012-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token"),
        (
            "https://hooks.slack.com/services/T0AB12CD3/B0AB12CD3/AbCdEfGhIjKlMnOpQrStUvWx",
            "slack_webhook",
        ),
        ("AIza" + "Sy" + "Ab3De5Fg7Hi9Jk1Lm3No5Pq7Rs9Tu1Vw3", "google_api_key"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            "jwt",
        ),
        ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----", "private_key"),
        ("password=Tr0ub4dor&3", "password"),
        ("grep -n 'db password: \"Tr0ub4dor&3\"' -r .", "password"),
        ('{"api_key": "abc123def456"}', "api_key"),
        ("client_secret: s3cr3t-value", "secret"),
        ("export GITHUB_TOKEN=abcdef123456", "token"),
        ("STRIPE_KEY=rk_live_abcdefghijklmnop1234", "stripe_key"),
        ("MAPBOX_KEY=pk.eyJ1IjoibWFwYm94In0abcdef", "secret"),
        ("--token abc123def456ghi", "token"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "token"),
        ("session cookie 9fQ2xLm7Zp4Rt8Wv1Ky6Nb3Hc5Jd0Ge in log", "high_entropy"),
    ],
)
def test_each_shape_is_redacted_with_its_kind(text: str, kind: str) -> None:
    assert f"[REDACTED:{kind}]" in redact(text)


def test_url_password_keeps_scheme_user_and_host() -> None:
    out = redact("mongodb+srv://admin:Pa55-w0rd!@cluster0.example.net/db?retryWrites=true")
    assert out == "mongodb+srv://admin:[REDACTED:password]@cluster0.example.net/db?retryWrites=true"
    assert redact("https://example.com:8443/path?q=1") == "https://example.com:8443/path?q=1"
    assert redact("ssh git@github.com:acme/repo.git") == "ssh git@github.com:acme/repo.git"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # the password a reference: nothing to hide, and the host is what a user asks for
            'dsn: "mall:${MYSQL_PASSWORD}@tcp(10.0.3.21:3306)/mall?charset=utf8mb4"',
            'dsn: "mall:${MYSQL_PASSWORD}@tcp(10.0.3.21:3306)/mall?charset=utf8mb4"',
        ),
        (
            'dsn: "mall:hunter2pw@tcp(rm-bp1k9x.mysql.rds.aliyuncs.com:3306)/mall"',
            'dsn: "mall:[REDACTED:password]@tcp(rm-bp1k9x.mysql.rds.aliyuncs.com:3306)/mall"',
        ),
        (
            "dsn: postgres://app:pw12345@db:5432/x",
            "dsn: postgres://app:[REDACTED:password]@db:5432/x",
        ),
        (
            "SENTRY_DSN=https://3f1a9b2c4d5e6f708192a3b4c5d6e7f8@o1.ingest.sentry.io/4",
            "SENTRY_DSN=https://[REDACTED:secret]@o1.ingest.sentry.io/4",
        ),
        (
            'dsn = "host=db user=app password=s3cretpw dbname=x"',
            'dsn = "host=db user=app password=[REDACTED:password] dbname=x"',
        ),
        ("DSN=q8Zr2LmXw4", "DSN=[REDACTED:secret]"),  # no connection string: all of it
        ("dsn: sqlite:///data.db", "dsn: sqlite:///data.db"),
    ],
)
def test_a_dsn_loses_its_password_and_keeps_its_host(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_private_spans_are_dropped() -> None:
    assert redact("a <private>secret stuff</private> b") == "a  b"
    assert redact("a <PRIVATE>x\ny</Private> b <private>c</private>") == "a  b "
    assert redact("keep this <private>and drop\neverything after") == "keep this "
    assert redact("no private here") == "no private here"


def test_private_key_without_end_is_dropped_to_the_end() -> None:
    out = redact("before\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nMIIE")
    assert out == "before\n[REDACTED:private_key]"


def test_code_references_and_placeholders_survive() -> None:
    for text in (
        "token: str",
        "password: Optional[str] = None",
        "self.token = request.token",
        'api_key = os.environ["API_KEY"]',
        "PASSWORD=${DB_PASSWORD}",
        "password: <your password>",
        "secret: true",
        "max_tokens: 1024, token_count=12, tokenizer: icu",
        "the author: Jane, keywords: a, b",
        "Bearer authentication is used",
        "a basic python3-compatible setup",
        "Basic python3-compatible setup",
    ):
        assert redact(text) == text, text


def test_extra_patterns() -> None:
    assert redact("ticket ACME-123456 opened", [r"ACME-\d+"]) == "ticket [REDACTED:custom] opened"
    assert (
        redact("employee id=E12345 ok", [r"id=(?P<secret>E\d+)"])
        == "employee id=[REDACTED:custom] ok"
    )
    with pytest.raises(ConfigError):
        redact("x", ["(unclosed"])


def test_redact_turn_covers_every_field() -> None:
    key = "sk-ant-api03-" + "Zq9_" * 20 + "AA"
    turn = Turn(
        uuid="0b3c5e0e-6f1c-4d8a-9a57-1f2b3c4d5e6f",
        session_id="s1",
        role="assistant",
        text=f"set ANTHROPIC_API_KEY={key}",
        tools=[ToolCall(name="Bash", summary=f"export ANTHROPIC_API_KEY={key}")],
        tool_errors=[f"401 invalid x-api-key {key}"],
        tool_outputs=[f"key: {key}"],
    )
    out = redact_turn(turn)
    assert key not in repr(out)
    assert key in turn.text  # the input is not modified
    assert out.uuid == turn.uuid
    assert out.tools[0].name == "Bash"
    assert all("[REDACTED:anthropic_key]" in s for s in (out.text, out.tools[0].summary))
    assert "[REDACTED:" in out.tool_errors[0] and "[REDACTED:" in out.tool_outputs[0]


def test_redaction_is_fast() -> None:
    texts = [text for text, _ in CORPUS] + NON_SECRETS
    prose = (
        "We decided to switch the formatter from black to ruff because it is faster. "
        "The failing test was in tests/test_store.py; root cause: a missing await. "
    ) * 6
    batch = (texts + [prose] * 20) * 10
    start = time.perf_counter()
    for text in batch:
        redact(text)
    elapsed = time.perf_counter() - start
    chars = sum(map(len, batch))
    # ~1 MB/s would be very slow; the measured rate here is far above this floor.
    assert chars / elapsed > 1_000_000 / 4, f"{chars / elapsed:.0f} chars/s"
    assert re.search(r"REDACTED", redact(batch[0]))


# ---- no secret reaches any file under MEMD_HOME (issue 15, defect 4) -----------------------

SECRETS = sorted({s for _, secrets in CORPUS for s in secrets})


def context_line(text: str, secret: str) -> str:
    """The corpus line a secret is on."""
    return next(line for line in text.splitlines() if secret in line)


def corpus_transcript(session: str, cwd: str) -> str:
    """One session that pastes every corpus document: as a prompt, as a Bash command's output
    (line by line), and lines of it in the command and in the assistant's answer (each secret
    in its corpus context: a bare password in prose is not recognisable as one)."""
    lines: list[dict[str, Any]] = []

    def line(kind: str, n: int, message: dict[str, Any]) -> None:
        lines.append(
            {
                "type": kind,
                "sessionId": session,
                "uuid": f"{session}-{len(lines)}",
                "cwd": cwd,
                "timestamp": f"2026-11-30T07:{n // 60:02d}:{n % 60:02d}.000Z",
                "message": message,
            }
        )

    for n, (text, secrets) in enumerate(CORPUS):
        line("user", n, {"role": "user", "content": f"Why does this fail?\n{text}"})
        tool = f"toolu_{n}"
        command = f"grep -n '{context_line(text, secrets[0]).strip()}' -r ."
        line(
            "assistant",
            n,
            {
                "id": f"msg-{n}",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": command}}
                ],
            },
        )
        outputs = [ln for ln in text.splitlines() if ln.strip()][:30]
        line(
            "user",
            n,
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool, "content": out, "is_error": False}
                    for out in outputs
                ],
            },
        )
        line(
            "assistant",
            n,
            {
                "id": f"msg-{n}-b",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"The culprit:\n{context_line(text, secrets[-1])}"}
                ],
            },
        )
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)


def decoded_leaks(home: Path) -> list[str]:
    """Secrets in what the store and the state DB hold once decoded (compressed pages included)."""
    import sqlite3

    import lancedb

    texts: list[str] = []
    store = home / "store"
    if (store / "memories.lance").exists():
        table = lancedb.connect(store).open_table("memories")
        for row in table.to_arrow().drop_columns(["vector"]).to_pylist():
            texts.append(json.dumps(row, ensure_ascii=False, default=str))
    db = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        texts += [repr(r) for r in db.execute(f"SELECT * FROM {name}").fetchall()]
    db.close()
    blob = "\n".join(texts)
    return [s[:10] for s in SECRETS if s in blob]


def wait_for(what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def segment_rows(home: Path) -> dict[str, int]:
    import sqlite3

    db = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT s.status, count(t.uuid) FROM segments s "
            "LEFT JOIN turns t ON t.segment_key = s.key GROUP BY s.status"
        ).fetchall()
    except sqlite3.OperationalError:
        rows = []
    db.close()
    return dict(rows)


def test_no_secret_reaches_any_file_under_memd_home(tmp_path: Path) -> None:
    """Scan every byte under MEMD_HOME while a session is open (its turns in state.db and the
    WAL), after it is extracted, and after the daemon stops: no corpus secret anywhere."""
    sock = short_socket_path()
    env = daemon_env(tmp_path, sock, MEMD_SESSION_IDLE_SECONDS="3600")
    home = Path(env["MEMD_HOME"])
    daemon = DaemonProcess(env, home / "logs" / "serve.log")
    (home / "logs").mkdir(parents=True)
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    transcripts = Path(env["MEMD_TRANSCRIPTS_DIR"]) / "-shop"
    transcripts.mkdir(parents=True)
    transcript = transcripts / "sess-secrets.jsonl"
    try:
        daemon.start()
        transcript.write_text(corpus_transcript("sess-secrets", str(project)), encoding="utf-8")
        assert all(s in transcript.read_text(encoding="utf-8") for s in SECRETS)
        for secret in SECRETS[:5]:  # prompts with secrets go through the hook path too
            payload = {"session_id": "sess-secrets", "prompt": f"use {secret}", "cwd": str(project)}
            daemon.request({"cmd": "hook", "event": "user-prompt-submit", "payload": payload})
        stop = {"session_id": "sess-secrets", "transcript_path": str(transcript)}
        daemon.request({"cmd": "hook", "event": "stop", "payload": stop})
        wait_for("the open segment", lambda: segment_rows(home).get("open", 0) >= len(CORPUS))

        # 1. Running, the session pending: its turns are in state.db (or still in the WAL).
        assert scan_tree(home, SECRETS) == []
        assert decoded_leaks(home) == []

        # 2. Running, the session extracted into memories.
        end = {"session_id": "sess-secrets", "transcript_path": str(transcript)}
        daemon.request({"cmd": "hook", "event": "session-end", "payload": end})
        wait_for("the extraction", lambda: "extracted" in segment_rows(home), timeout=120)
        added = daemon.request(
            {"cmd": "add", "text": f"deploy key {SECRETS[0]}", "project": str(project)}
        )
        assert added["ok"] and "[REDACTED:" in added["memory"]["text"]
        stored = daemon.request({"cmd": "list", "project": str(project), "include_all": True})
        assert stored["total"] > len(CORPUS)  # the scan looks at real memories
        assert scan_tree(home, SECRETS) == []
        assert decoded_leaks(home) == []
    finally:
        code = daemon.stop() if daemon.proc is not None else 0
        remove_socket_dir(sock)
    # 3. Stopped (the WAL checkpointed into state.db); the daemon's DEBUG log included.
    assert code == 0, daemon.log()
    assert scan_tree(home, SECRETS) == []
    assert decoded_leaks(home) == []
    assert (home / "state.db").stat().st_size > 0


def test_scan_finds_a_secret_in_any_file(tmp_path: Path) -> None:
    """The scanner itself: a secret in a binary file, or JSON-escaped, is found."""
    secret = SECRETS[0]
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.bin").write_bytes(b"\x00\x01" + secret.encode() + b"\xff")
    (tmp_path / "j.json").write_text(json.dumps({"k": "-----\n" + SECRETS[1]}))
    (tmp_path / "clean").write_bytes(b"nothing here")
    found = scan_tree(tmp_path, SECRETS)
    assert len(found) == 2 and found[0].startswith("a/b/x.bin")
