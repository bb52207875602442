"""The live tailer, with a real watchdog observer on temporary directories."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memd.ingest.session import SessionTracker
from memd.ingest.tailer import INITIALIZED_KEY, Tailer
from memd.settings import Settings
from memd.state import State

HERE = Path(__file__).parent / "transcripts"
SID = "live-0001"

# watchdog's inotify emitter warns (from its own thread) when directories appear in quick
# succession; with warnings as errors that would kill the emitter thread. Not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Callback with id .* already exists for watch:RuntimeWarning"
)


def wait_for(cond: Callable[[], object], timeout: float = 15.0) -> None:
    """Poll for the condition (generous timeout: CI machines can be loaded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {timeout}s")


def line(uuid: str, text: str, role: str = "user", sid: str = SID, **extra: object) -> bytes:
    if role == "user":
        message: dict[str, object] = {"role": "user", "content": text}
    else:
        message = {
            "id": f"msg-{uuid}",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        }
    obj = {
        "type": role,
        "uuid": uuid,
        "sessionId": sid,
        "cwd": "/work/live-project",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": message,
        **extra,
    }
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class Rig:
    def __init__(self, tmp_path: Path, **kw: object) -> None:
        self.root = tmp_path / "projects"
        self.settings = Settings(
            home=tmp_path / "memd", transcripts_dir=self.root, **{"rescan_seconds": 3600, **kw}
        )
        self.state = State(tmp_path / "memd" / "state.db")
        self.tracker = SessionTracker(self.settings, self.state)
        self.tailers: list[Tailer] = []

    def start(self, **kw: object) -> Tailer:
        tailer = Tailer(self.settings, self.state, self.tracker, **kw)  # type: ignore[arg-type]
        self.tailers.append(tailer)
        tailer.start()
        return tailer

    def uuids(self, sid: str = SID) -> list[str]:
        return [t.uuid for t in self.tracker.open_turns(sid)]

    def stop(self) -> None:
        for t in self.tailers:
            t.stop()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    (tmp_path / "projects").mkdir()
    r = Rig(tmp_path)
    yield r
    r.stop()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)
        f.flush()


def test_appends_in_a_new_project_folder_become_visible(rig: Rig) -> None:
    rig.start()
    project = rig.root / "-work-live-project"
    project.mkdir()
    path = project / f"{SID}.jsonl"
    append(path, line("u1", "first prompt") + line("a1", "first answer", "assistant"))
    wait_for(lambda: rig.uuids() == ["u1", "a1"])
    append(path, line("u2", "second prompt 第二"))
    wait_for(lambda: rig.uuids() == ["u1", "a1", "u2"])
    assert rig.tracker.open_turns(SID)[2].text == "second prompt 第二"
    rec = rig.state.get_offset(str(path))
    assert rec is not None and rec.offset == path.stat().st_size


def test_partial_line_waits_for_its_newline(rig: Rig) -> None:
    tailer = rig.start()
    path = rig.root / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    first, second = line("u1", "complete"), line("a1", "arrives in two writes", "assistant")
    append(path, first + second[:40])
    wait_for(lambda: rig.uuids() == ["u1"])
    assert tailer.wait_idle(15)
    rec = rig.state.get_offset(str(path))
    assert rec is not None and rec.offset == len(first)  # the partial bytes are not consumed
    append(path, second[40:])
    wait_for(lambda: rig.uuids() == ["u1", "a1"])
    assert rig.tracker.open_turns(SID)[1].text == "arrives in two writes"
    assert tailer.reader.stats.bad_lines == 0


def test_truncation_rereads_without_duplicates(rig: Rig) -> None:
    tailer = rig.start()
    path = rig.root / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    append(path, line("u1", "one") + line("a1", "two", "assistant") + line("u2", "three"))
    wait_for(lambda: rig.uuids() == ["u1", "a1", "u2"])
    with open(path, "wb") as f:  # truncate, then write an old line and a new one
        f.write(line("u1", "one") + line("u3", "four"))
    wait_for(lambda: rig.uuids() == ["u1", "a1", "u2", "u3"])
    assert tailer.wait_idle(15)
    rec = rig.state.get_offset(str(path))
    assert rec is not None and rec.offset == path.stat().st_size


def test_atomic_replace_rereads_the_new_inode(rig: Rig) -> None:
    tailer = rig.start()
    path = rig.root / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    append(path, line("u1", "one") + line("a1", "two", "assistant"))
    wait_for(lambda: rig.uuids() == ["u1", "a1"])
    tmp = path.with_name(".tmp-rewrite")
    tmp.write_bytes(line("u1", "one") + line("a1", "two", "assistant") + line("u2", "new"))
    os.replace(tmp, path)
    wait_for(lambda: rig.uuids() == ["u1", "a1", "u2"])
    assert tailer.wait_idle(15)
    rec = rig.state.get_offset(str(path))
    assert rec is not None and rec.inode == path.stat().st_ino


def test_deleted_file_forgets_its_offset(rig: Rig) -> None:
    rig.start()
    path = rig.root / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    append(path, line("u1", "one"))
    wait_for(lambda: rig.state.get_offset(str(path)) is not None)
    path.unlink()
    wait_for(lambda: rig.state.get_offset(str(path)) is None)
    assert rig.uuids() == ["u1"]  # the turns stay; the session closes as usual


def test_restart_resumes_from_the_stored_offset(tmp_path: Path) -> None:
    (tmp_path / "projects" / "p").mkdir(parents=True)
    path = tmp_path / "projects" / "p" / f"{SID}.jsonl"
    first = Rig(tmp_path)
    first.start()
    append(path, line("u1", "one") + line("a1", "two", "assistant"))
    wait_for(lambda: first.uuids() == ["u1", "a1"])
    first.stop()
    first.state.close()
    append(path, line("u2", "written while memd was down") + line("a2", "ok", "assistant"))
    second = Rig(tmp_path)
    try:
        tailer = second.start()
        wait_for(lambda: second.uuids() == ["u1", "a1", "u2", "a2"])
        assert tailer.reader.stats.lines == 2  # only the new lines were read
    finally:
        second.stop()


def test_first_start_skips_quiet_history(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "p"
    project.mkdir(parents=True)
    old, recent = project / "old-0001.jsonl", project / "recent-0001.jsonl"
    old.write_bytes(line("o1", "history", sid="old-0001"))
    recent.write_bytes(line("r1", "active session", sid="recent-0001"))
    past = time.time() - 7200
    os.utime(old, (past, past))
    rig = Rig(tmp_path, session_idle_seconds=600)
    try:
        tailer = rig.start()
        wait_for(lambda: rig.uuids("recent-0001") == ["r1"])
        assert tailer.wait_idle(15)
        assert rig.uuids("old-0001") == []  # history is what `memd ingest` is for
        assert rig.state.get(INITIALIZED_KEY) is not None
        append(old, line("o2", "the old session goes on", sid="old-0001"))
        wait_for(lambda: rig.uuids("old-0001") == ["o2"])
    finally:
        rig.stop()


def test_rescan_finds_what_events_missed(tmp_path: Path) -> None:
    rig = Rig(tmp_path, rescan_seconds=0.2)  # the projects dir does not exist yet
    try:
        rig.start()
        project = rig.root / "p"
        project.mkdir(parents=True)
        append(project / f"{SID}.jsonl", line("u1", "found by the rescan"))
        wait_for(lambda: rig.uuids() == ["u1"])
        append(project / f"{SID}.jsonl", line("u2", "then by an event"))
        wait_for(lambda: rig.uuids() == ["u1", "u2"])
    finally:
        rig.stop()


def test_subagents_compaction_and_session_end(rig: Rig) -> None:
    tailer = rig.start()
    project = rig.root / "p"
    sub = project / SID / "subagents"
    sub.mkdir(parents=True)
    main = project / f"{SID}.jsonl"
    append(main, line("u1", "spawn an agent"))
    sidechain = {"isSidechain": True, "agentId": "a1b2c3d"}
    append(sub / "agent-a1b2c3d.jsonl", line("s1", "agent task", **sidechain))
    compactor = {"isSidechain": True, "agentId": "acompact-99aa"}
    append(sub / "agent-acompact-99aa.jsonl", line("x1", "summarize", **compactor))
    legacy = {"isSidechain": True, "agentId": "1234abcd"}
    append(project / "agent-1234abcd.jsonl", line("l1", "legacy agent task", **legacy))
    wait_for(lambda: set(rig.uuids()) == {"u1", "s1", "l1"})
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "sessionId": SID,
        "timestamp": "2026-03-01T10:05:00.000Z",
    }
    append(main, (json.dumps(boundary) + "\n").encode() + line("u2", "after compaction"))
    wait_for(lambda: rig.uuids() == ["u2"])
    [compacted] = rig.state.pending_segments()
    assert compacted.reason == "compaction"
    assert {t.uuid for t in compacted.turns} == {"u1", "s1", "l1"}
    assert compacted.project == "/work/live-project"
    # Session end: read what the hook's transcript_path holds now, then close.
    append(main, line("a2", "last words", "assistant"))
    tailer.poll(main)
    key = rig.tracker.close_session(SID)
    assert key is not None
    seg = rig.state.segment(key)
    assert seg is not None and [t.uuid for t in seg.turns] == ["u2", "a2"]
    assert seg.reason == "session-end"
    assert tailer.wait_idle(15)
    assert rig.state.get_offset(str(sub / "agent-acompact-99aa.jsonl")) is None


def test_a_hand_written_transcript_streamed_byte_by_byte_chunks(rig: Rig) -> None:
    tailer = rig.start()
    path = rig.root / "p" / "cjk-0001.jsonl"
    path.parent.mkdir()
    raw = (HERE / "cjk.jsonl").read_bytes().replace(b"@ROOT@", b"/work")
    for i in range(0, len(raw), 97):  # odd-sized writes split lines and UTF-8 characters
        append(path, raw[i : i + 97])
    wait_for(lambda: rig.uuids("cjk-0001") == ["cjk-u1", "cjk-a1", "cjk-a4"])
    assert tailer.wait_idle(15)
    assert tailer.reader.stats.bad_lines == 0
    turns = rig.tracker.open_turns("cjk-0001")
    assert turns[1].uuids == ["cjk-a1", "cjk-a2", "cjk-a3", "cjk-u2"]
    assert "Русский" in turns[2].text


def test_symlinked_transcripts_dir_uses_real_paths(tmp_path: Path) -> None:
    real = tmp_path / "real-projects"
    (real / "p").mkdir(parents=True)
    link = tmp_path / "projects"
    link.symlink_to(real)
    rig = Rig(tmp_path)
    try:
        tailer = rig.start()
        via_link = link / "p" / f"{SID}.jsonl"
        append(via_link, line("u1", "through the symlink"))
        assert tailer.poll(via_link) in (0, 1)  # a hook's transcript_path may use the link
        wait_for(lambda: rig.uuids() == ["u1"])
        assert tailer.wait_idle(15)
        assert set(rig.state.offsets()) == {str(real / "p" / f"{SID}.jsonl")}
    finally:
        rig.stop()


def test_the_tailer_closes_idle_sessions(tmp_path: Path) -> None:
    (tmp_path / "projects" / "p").mkdir(parents=True)
    rig = Rig(tmp_path, rescan_seconds=0.1, session_idle_seconds=0.3)
    try:
        rig.start()
        append(tmp_path / "projects" / "p" / f"{SID}.jsonl", line("u1", "then silence"))
        wait_for(lambda: rig.state.counts()["pending"] == 1)
        [seg] = rig.state.pending_segments()
        assert seg.reason == "idle" and [t.uuid for t in seg.turns] == ["u1"]
    finally:
        rig.stop()


def test_live_tailing_a_big_real_transcript_matches_backfill(
    fixture_root: Path, tmp_path: Path
) -> None:
    """ae4a77f8 (2.7 MB, compaction, 1,697 progress lines) written in odd-sized chunks."""
    from memd.ingest.backfill import backfill

    src = fixture_root / "fixtures" / "transcripts"
    sid = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    main_raw = (src / f"marot-spotter__{sid}.jsonl").read_bytes()
    sub_raw = (src / "marot-spotter__agent-aac57f5.jsonl").read_bytes()

    ref_dir = tmp_path / "ref" / "-p"
    (ref_dir / sid / "subagents").mkdir(parents=True)
    (ref_dir / f"{sid}.jsonl").write_bytes(main_raw)
    (ref_dir / sid / "subagents" / "agent-aac57f5.jsonl").write_bytes(sub_raw)
    ref_state = State(tmp_path / "ref.db")
    backfill([tmp_path / "ref"], ref_state, Settings(home=tmp_path / "x", transcripts_dir=tmp_path))
    expected = [
        (s.reason, sorted(u for t in s.turns for u in t.uuids))
        for s in ref_state.pending_segments()
    ]
    assert [r for r, _ in expected] == ["compaction", "ingest"]

    (tmp_path / "projects").mkdir()
    rig = Rig(tmp_path)
    try:
        tailer = rig.start()
        live = rig.root / "-p"
        (live / sid / "subagents").mkdir(parents=True)
        append(live / sid / "subagents" / "agent-aac57f5.jsonl", sub_raw)
        path = live / f"{sid}.jsonl"
        rng = random.Random(3)
        pos = 0
        while pos < len(main_raw):
            step = rng.randint(1, 200_000)
            append(path, main_raw[pos : pos + step])
            pos += step
            if rng.random() < 0.3:
                time.sleep(0.01)
        wait_for(lambda: (rec := rig.state.get_offset(str(path))) and rec.offset == len(main_raw))
        assert tailer.wait_idle(15)
        rig.tracker.close_session(sid, "ingest")
        got = [
            (s.reason, sorted(u for t in s.turns for u in t.uuids))
            for s in rig.state.pending_segments()
        ]
        # The main session's turns split at the compaction exactly as in backfill. The subagent
        # file's turns land in whichever segment is open when that file is read (live tailing
        # cannot order two files by timestamp the way backfill does), so for them only
        # "each exactly once" is checked.
        sub = {json.loads(raw)["uuid"] for raw in sub_raw.splitlines() if b'"uuid"' in raw}
        assert [(r, [u for u in us if u not in sub]) for r, us in got] == [
            (r, [u for u in us if u not in sub]) for r, us in expected
        ]
        got_all = [u for _, us in got for u in us]
        assert sorted(got_all) == sorted(u for _, us in expected for u in us)
        assert len(got_all) == len(set(got_all))
        assert tailer.reader.stats.bad_lines == 0
    finally:
        rig.stop()


def test_a_dead_watcher_is_restarted(tmp_path: Path) -> None:
    (tmp_path / "projects" / "p").mkdir(parents=True)
    rig = Rig(tmp_path, rescan_seconds=0.1)
    try:
        tailer = rig.start()
        dead = tailer._observer
        assert dead is not None
        dead.stop()
        dead.join(5)
        path = tmp_path / "projects" / "p" / f"{SID}.jsonl"
        append(path, line("u1", "written while the watcher was down"))
        wait_for(lambda: tailer._observer is not dead and tailer._observer.is_alive())
        wait_for(lambda: rig.uuids() == ["u1"])
        append(path, line("u2", "seen by the new watcher"))
        wait_for(lambda: rig.uuids() == ["u1", "u2"])
    finally:
        rig.stop()
