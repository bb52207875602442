"""Issue 31 with a real daemon: five requests in conversation to forget something (an SSN, a
password, a home address, a phone number in Chinese, a bare "forget that"), and secrets said in
words. Transcripts are written as Claude Code JSONL and read by `memd ingest` through the
daemon; what a hook would inject comes from the socket's `context` and from `memd-hook`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path
from redaction_corpus import scan_tree

FACTS = {
    # what the fact is -> (how it is said, strings that carry it)
    "ssn": (
        "My social security number is 123-45-6789, the HR onboarding form needs it.",
        ["social security", "123-45-6789"],
    ),
    "password": (
        "My password for the company VPN is SuperSecret123! in case the login script asks.",
        ["SuperSecret123", "password for the company VPN"],
    ),
    "address": (
        "My home address is 42 Elm Street, Springfield. Use it as the default shipping "
        "address for the test orders.",
        ["42 Elm Street"],
    ),
    "phone": ("我的手机号是 13812345678，联系人字段默认用它。", ["13812345678"]),
    "bare": ("My badge number is B-99213 for the door system.", ["B-99213"]),
}
KEPT = ["Postgres", "retry logic", "run the migrations", "forgot to add tests"]
"""Said in the same sessions, and no request to forget: all of it stays."""
QUESTIONS = {
    "ssn": "What is my social security number?",
    "password": "What is my password for the company VPN?",
    "address": "What is my home address for the shipping defaults?",
    "phone": "我的手机号是多少？",
    "bare": "What is my badge number for the door system?",
}


class Transcript:
    def __init__(self, path: Path, session: str, cwd: str, day: str) -> None:
        self.path, self.session, self.cwd, self.day = path, session, cwd, day
        self.lines: list[dict[str, Any]] = []

    def say(self, role: str, text: str) -> None:
        n = len(self.lines)
        message: dict[str, Any] = {"role": role, "content": text}
        if role == "assistant":
            content = [{"type": "text", "text": text}]
            message = {"id": f"msg-{self.session}-{n}", "role": role, "content": content}
        self.lines.append(
            {
                "type": role,
                "sessionId": self.session,
                "uuid": f"{self.session}-{n:03d}",
                "cwd": self.cwd,
                "timestamp": f"{self.day}T10:{n // 60:02d}:{n % 60:02d}.000Z",
                "message": message,
            }
        )

    def chat(self, *pairs: tuple[str, str]) -> None:
        for user, claude in pairs:
            self.say("user", user)
            self.say("assistant", claude)

    def write(self) -> str:
        self.path.write_text(
            "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in self.lines), "utf-8"
        )
        return str(self.path)


def ok(run: Any) -> str:
    assert run.returncode == 0, run.stderr
    return str(run.stdout)


def active_texts(daemon: DaemonProcess, project: str) -> str:
    listed = json.loads(ok(daemon.memd("list", "--json", "--project", project)))
    return "\n".join(m["text"] for m in listed)


def test_five_forget_requests_with_a_real_daemon(tmp_path: Path) -> None:
    sock = short_socket_path()
    env = daemon_env(tmp_path, sock, MEMD_SESSION_IDLE_SECONDS="3600")
    home = Path(env["MEMD_HOME"])
    daemon = DaemonProcess(env, tmp_path / "serve.log")
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    cwd = str(project)
    folder = Path(env["MEMD_TRANSCRIPTS_DIR"]) / "-shop"
    folder.mkdir(parents=True)
    try:
        daemon.start()
        # Session 1: the facts, each answered, with work that must survive.
        one = Transcript(folder / "s1.jsonl", "sess-one", cwd, "2026-11-20")
        one.chat(
            (FACTS["ssn"][0], "Noted, I filled the HR onboarding form."),
            (FACTS["password"][0], "OK, the login script reads it from the prompt."),
            (FACTS["address"][0], "Done: test orders now ship to 42 Elm Street, Springfield."),
            (FACTS["phone"][0], "好的，联系人字段默认 13812345678。"),
            ("We decided to use Postgres for the order service.", "Noted: Postgres it is."),
            ("The retry logic lives in orders/retry.py.", "Right, with exponential backoff."),
        )
        ok(daemon.memd("ingest", one.write()))
        before = active_texts(daemon, cwd)
        for fact, (_, carried) in FACTS.items():
            if fact not in ("ssn", "password", "bare"):
                assert carried[0] in before, fact
        for fact in ("address", "phone"):  # the facts come back before they are forgotten
            block = daemon.request(
                {"cmd": "context", "cwd": cwd, "prompt": QUESTIONS[fact], "session_id": "s1b"}
            )["context"]
            assert FACTS[fact][1][0] in block, (fact, block)
        # Secrets in words never reached the store in the first place.
        assert "123-45-6789" not in before and "SuperSecret123" not in before
        assert "[REDACTED:national_id]" in before and "[REDACTED:password]" in before

        # Session 2: the requests (and sentences that are no requests).
        prompt = "Please forget that password immediately."
        reply = daemon.request(
            {
                "cmd": "hook",
                "event": "user-prompt-submit",
                "payload": {"session_id": "sess-two", "prompt": prompt, "cwd": cwd},
            }
        )
        assert reply["ok"] and reply["context"] == ""  # nothing is recalled for the request
        # ... and what it names is archived right away, before the session is extracted.
        deadline = time.monotonic() + 30
        while "password for the company VPN" in active_texts(daemon, cwd):
            assert time.monotonic() < deadline, "the prompt's request was not honoured"
            time.sleep(0.2)
        two = Transcript(folder / "s2.jsonl", "sess-two", cwd, "2026-11-21")
        two.chat(
            ("Actually, please forget my social security number.", "Understood."),
            (prompt, "Done, I won't use it."),
            ("forget my home address", "OK."),
            ("把我的手机号忘了", "好的。"),
            (FACTS["bare"][0], "Noted."),
            ("Actually, forget that.", "Sure."),
            (
                "Forget about the retry logic for now, focus on the parser. I forgot to add "
                "tests, and don't forget to run the migrations.",
                "Got it: parser first, then tests and the migrations.",
            ),
        )
        ok(daemon.memd("ingest", two.write()))

        # The next session: nothing of the five in the brief, in any prompt's block, in the
        # list or in search; the rest is still there.
        active = active_texts(daemon, cwd)
        brief = daemon.request(
            {"cmd": "context", "cwd": cwd, "event": "session-start", "session_id": "sess-three"}
        )["context"]
        hook = daemon.hook(
            "session-start", {"session_id": "sess-three", "cwd": cwd, "source": "startup"}
        )
        assert hook.returncode == 0
        for fact, (_, carried) in FACTS.items():
            block = daemon.request(
                {"cmd": "context", "cwd": cwd, "prompt": QUESTIONS[fact], "session_id": "s3"}
            )["context"]
            found = json.loads(ok(daemon.memd("search", QUESTIONS[fact], "--json", cwd=cwd)))
            for text in carried:
                for where, what in [
                    ("list", active),
                    ("brief", brief),
                    ("hook", hook.stdout),
                    ("block", block),
                    ("search", json.dumps(found, ensure_ascii=False)),
                ]:
                    assert text.lower() not in what.lower(), (fact, where, text)
        for text in ("forget my", "forget that", "忘了"):
            assert text not in active  # the requests are not memories
        for text in KEPT:
            assert text in active, text

        extractor = json.loads(ok(daemon.memd("status", "--json")))["extractor"]
        assert extractor["forgotten"] >= 5
        # Each of them is archived, and `memd restore` brings it back.
        listed = json.loads(ok(daemon.memd("list", "--all", "--json", "--project", cwd)))
        archived = [m for m in listed if m["status"] == "archived"]
        assert all("asked in conversation to forget" in str(m["history"]) for m in archived)
        for fact in ("address", "phone", "bare"):
            carried = FACTS[fact][1][0]
            mine = [m for m in archived if carried in m["text"]]
            assert mine, fact
            ok(daemon.memd("restore", mine[0]["id"]))
            assert carried in active_texts(daemon, cwd)
        ssn = [m for m in archived if "social security" in m["text"]]
        assert ssn
        ok(daemon.memd("restore", ssn[0]["id"]))
        assert "social security" in active_texts(daemon, cwd)
    finally:
        code = daemon.stop() if daemon.proc is not None else 0
        remove_socket_dir(sock)
    assert code == 0, daemon.log()
    # The secrets said in words are on no file memd wrote (state DB, store, journal, logs).
    assert scan_tree(home, ["123-45-6789", "SuperSecret123"]) == []
    # The forgotten facts are not in the evidence memd keeps beside the (archived) memories:
    # the state DB's copies of turns, and the daemon's DEBUG log.
    facts = ["42 Elm Street", "13812345678", "B-99213"]
    for file in home.glob("state.db*"):
        data = file.read_bytes()
        assert not any(x.encode() in data for x in facts), file
    assert not any(x in (tmp_path / "serve.log").read_text("utf-8") for x in facts)
