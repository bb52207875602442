"""memd's durable state: key/value, offsets, segments, transactions, threads, crashes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memd.models import ToolCall, Turn
from memd.state import MAX_ATTEMPTS, SessionRecord, State


def turn(uuid: str, text: str = "hello", session: str = "s1") -> Turn:
    return Turn(
        uuid=uuid,
        session_id=session,
        role="user",
        text=text,
        tools=[ToolCall("Bash", "ls")],
        uuids=[uuid, uuid + "-b"],
    )


def closed_segment(state: State, key: str = "s1:0:u1", n: int = 2) -> str:
    state.create_segment(key, "s1", 0, "/repo")
    for i in range(n):
        state.put_turn(key, i, turn(f"{key}-u{i}", text=f"turn {i} 中文"))
    state.close_segment(key, "idle", "/repo", n)
    return key


def test_kv_round_trip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "memd" / "state.db"
    state = State(path)
    assert state.get("missing") is None
    assert state.get("missing", {"d": 1}) == {"d": 1}
    state.set("jobs.decay.last_run", {"at": "2026-01-01T00:00:00Z", "status": "ok"})
    state.set("extractor.tokens", 1234)
    state.set("injected.s1", ["a", "b"])
    state.set("extractor.tokens", 1500)
    state.close()
    again = State(path)
    assert again.get("extractor.tokens") == 1500
    assert again.items("jobs.") == {
        "jobs.decay.last_run": {"at": "2026-01-01T00:00:00Z", "status": "ok"}
    }
    again.delete("injected.s1")
    assert again.get("injected.s1") is None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_pragmas_are_durable(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    assert state._query("PRAGMA journal_mode")[0][0] == "wal"
    assert state._query("PRAGMA synchronous")[0][0] == 2  # FULL


def test_offsets(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    assert state.get_offset("/p/a.jsonl") is None
    state.set_offset("/p/a.jsonl", 11, 100, 120)
    state.set_offset("/p/a.jsonl", 11, 120, 120)
    rec = state.get_offset("/p/a.jsonl")
    assert rec is not None and (rec.inode, rec.offset, rec.size) == (11, 120, 120)
    assert set(state.offsets()) == {"/p/a.jsonl"}
    state.forget_offset("/p/a.jsonl")
    assert state.get_offset("/p/a.jsonl") is None


def test_segment_lifecycle(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    state.create_segment("s1:0:u1", "s1", 0, "/repo")
    state.put_turn("s1:0:u1", 0, turn("u1"))
    assert state.counts() == {"open": 1, "pending": 0, "extracted": 0, "failed": 0}
    assert state.pending_segments() == []
    state.put_turn("s1:0:u1", 1, turn("u2", "second"))
    state.put_turn("s1:0:u1", 1, turn("u2", "second, grown"))  # a grown turn is rewritten
    state.close_segment("s1:0:u1", "session-end", "/repo", 2)
    [seg] = state.pending_segments()
    assert (seg.key, seg.session_id, seg.project, seg.reason) == (
        "s1:0:u1",
        "s1",
        "/repo",
        "session-end",
    )
    assert [t.text for t in seg.turns] == ["hello", "second, grown"]
    assert seg.turns[0].tools == [ToolCall("Bash", "ls")] and seg.turns[0].uuids == ["u1", "u1-b"]
    assert state.counts()["pending"] == 1
    state.mark_extracted(seg.key)
    assert state.pending_segments() == []
    assert state.counts() == {"open": 0, "pending": 0, "extracted": 1, "failed": 0}
    assert state.segment_turns(seg.key) == []  # turns are dropped once memories are stored
    info = state.segment_info(seg.key)
    assert info is not None and info["status"] == "extracted" and info["extracted_at"]


def test_empty_segment_is_dropped_on_close(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    state.create_segment("s1:0:x", "s1", 0, "")
    state.close_segment("s1:0:x", "idle", "", 0)
    assert state.segment("s1:0:x") is None


def test_failed_extraction_retries_with_backoff(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    key = closed_segment(state)
    state.mark_failed(key, "HTTP 529")
    info = state.segment_info(key)
    assert info is not None
    assert (info["status"], info["attempts"], info["last_error"]) == ("pending", 1, "HTTP 529")
    assert state.pending_segments() == []  # backing off
    assert [s.key for s in state.pending_segments(now=time.time() + 31)] == [key]
    for _ in range(MAX_ATTEMPTS - 1):
        state.mark_failed(key, "still failing")
    assert state.counts()["failed"] == 1
    assert state.pending_segments(now=time.time() + 10**6) == []
    assert state.retry_failed() == 1
    assert [s.key for s in state.pending_segments()] == [key]
    assert len(state.pending_segments()[0].turns) == 2


def test_transaction_rolls_back_everything(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    with pytest.raises(RuntimeError), state.transaction():
        state.set("k", 1)
        state.set_offset("/f", 1, 10, 10)
        with state.transaction():  # nested: joins the outer one
            state.create_segment("s:0:u", "s", 0, "")
        raise RuntimeError("boom")
    assert state.get("k") is None
    assert state.get_offset("/f") is None
    assert state.counts()["open"] == 0
    with state.transaction():
        state.set("k", 2)
    assert state.get("k") == 2


def test_threads_share_one_state(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                with state.transaction():
                    state.set(f"t{n}.{i}", i)
                    state.add_seen([f"{n}-{i}"])
                state.get(f"t{n}.{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(state.items("t")) == 300
    assert state.seen("5-49")


CRASH_WRITER = """
import sys
from memd.state import State
state = State(sys.argv[1])
i = state.get("counter", 0)
print("ready", flush=True)
while True:
    with state.transaction():
        i += 1
        state.set("counter", i)
        state.set_offset("/f.jsonl", 1, i * 10, i * 10)
        state.add_seen([f"u{i}"])
"""


def test_kill_9_never_tears_a_transaction(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", CRASH_WRITER, str(db)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.05 + (hash(str(proc.pid)) % 100) / 1000)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        state = State(db)
        n = state.get("counter", 0)
        rec = state.get_offset("/f.jsonl")
        assert n > 0 and rec is not None
        assert rec.offset == n * 10  # offset and counter committed together
        assert state.seen(f"u{n}") and not state.seen(f"u{n + 1}")
        state.close()


def test_a_failed_savepoint_undoes_only_its_own_writes(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    with state.transaction():
        state.set("outer", 1)
        with pytest.raises(ValueError), state.transaction(savepoint=True):
            state.set("inner", 2)
            state.set_offset("/f", 1, 5, 5)
            raise ValueError("one file failed")
        with state.transaction(savepoint=True):
            state.set("next", 3)
    assert (state.get("outer"), state.get("inner"), state.get("next")) == (1, None, 3)
    assert state.get_offset("/f") is None


def test_claimed_segments_go_to_one_worker(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    key = closed_segment(state)
    other = State(tmp_path / "state.db")  # another connection, as another process would have
    [seg] = state.claim_segments(limit=5, lease_seconds=60)
    assert seg.key == key and len(seg.turns) == 2
    assert other.claim_segments(limit=5) == []
    assert state.pending_segments() == []  # leased, not due
    assert state.counts()["pending"] == 1  # still pending until stored
    assert [s.key for s in other.claim_segments(now=time.time() + 61)] == [key]  # lease expired
    state.mark_extracted(key)
    assert other.claim_segments(now=time.time() + 10**6) == []


def test_recent_projects_newest_first(tmp_path: Path) -> None:
    st = State(tmp_path / "state.db")
    try:
        for sid, project, at in (
            ("a", "/p/old", 100.0),
            ("b", "/p/new", 300.0),
            ("c", "/p/mid", 200.0),
            ("d", "/p/old", 150.0),
            ("e", "", 999.0),  # no project yet: not a candidate
        ):
            st.save_session(SessionRecord(sid, project=project, last_activity=at))
        assert st.recent_projects(5) == ["/p/new", "/p/mid", "/p/old"]
        assert st.recent_projects(1) == ["/p/new"]
    finally:
        st.close()


def test_turns_are_redacted_before_they_are_written(tmp_path: Path) -> None:
    """A pending turn sits in state.db for hours: the file and its WAL never see the secret."""
    key = "sk-ant-api03-" + "Qw3_" * 20 + "AA"
    path = tmp_path / "state.db"
    state = State(path)
    state.create_segment("s1:0:u1", "s1", 0, "/repo")
    raw = Turn(
        uuid="u1",
        session_id="s1",
        role="user",
        text=f"export ANTHROPIC_API_KEY={key} and ticket ACME-123456",
        tools=[ToolCall("Bash", f"curl -H 'x-api-key: {key}'")],
        tool_outputs=[f"key={key}"],
    )
    state.put_turn("s1:0:u1", 0, raw, [r"ACME-\d+"])
    stored = state.segment_turns("s1:0:u1")[0]
    assert key not in repr(stored) and "ACME-123456" not in stored.text
    assert "[REDACTED:anthropic_key]" in stored.text and "[REDACTED:custom]" in stored.text
    assert key in raw.text  # the caller's turn is not modified
    state.mark_failed("s1:0:u1", f"API said: invalid key {key}")
    assert key not in str(state.segment_info("s1:0:u1"))
    for f in tmp_path.glob("state.db*"):
        assert key.encode() not in f.read_bytes(), f.name
    state.close()


def test_secure_delete_zeroes_extracted_turns(tmp_path: Path) -> None:
    """Debian's SQLite zeroes deleted content by default; macOS's does not: memd asks for it."""
    path = tmp_path / "state.db"
    state = State(path)
    assert state._query("PRAGMA secure_delete")[0][0] == 1
    marker = "turn-text-that-must-vanish-" + "x" * 200
    state.create_segment("s1:0:u1", "s1", 0, "/repo")
    state.put_turn("s1:0:u1", 0, turn("u1", text=marker))
    state.close_segment("s1:0:u1", "idle", "/repo", 1)
    state.mark_extracted("s1:0:u1")
    state.checkpoint()
    state.close()
    for f in tmp_path.glob("state.db*"):
        assert marker.encode() not in f.read_bytes(), f.name


def test_state_schema_version(tmp_path: Path) -> None:
    from memd.errors import SchemaTooNew
    from memd.state import STATE_VERSION

    path = tmp_path / "state.db"
    State(path).close()
    import sqlite3

    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == STATE_VERSION
    db.execute(f"PRAGMA user_version = {STATE_VERSION + 1}")
    db.close()
    before = path.read_bytes()
    with pytest.raises(SchemaTooNew, match="newer memd"):
        State(path)
    assert path.read_bytes() == before  # refused, never rewritten
