"""Sessions and segments: attribution, closing rules, dedupe, guards, backfill, crashes."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memd.ingest.backfill import backfill, transcript_units
from memd.ingest.session import MEMD_EXTRACTION_PROMPT_MARKER, SessionTracker
from memd.ingest.transcript import parse_items
from memd.models import Segment
from memd.project import resolve_project
from memd.settings import Settings
from memd.state import State

HERE = Path(__file__).parent / "transcripts"

D = "daaain/test/test_data/real_projects"
M = "marot/test/fixtures/transcripts"
EF = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
AE = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
# Fixture file → its original path in its repository (SOURCES.md, "Original path").
LAYOUT = {
    "daaain-claude-code-log__fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl": f"{D}/-Users-dain-workspace-claude-code-log-sample/fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl",
    "daaain-claude-code-log__71c9afe9-d9cc-4583-86b3-e62ba682b83a.jsonl": f"{D}/-Users-dain-workspace-claude-code-log-sample/71c9afe9-d9cc-4583-86b3-e62ba682b83a.jsonl",
    "daaain-claude-code-log__4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl": f"{D}/-Users-dain-workspace-claude-code-log-sample/4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl",
    "daaain-claude-code-log__agent-3be551df.jsonl": f"{D}/-Users-dain-workspace-claude-code-log-sample/agent-3be551df.jsonl",
    "daaain-claude-code-log__agent-b52b1c09.jsonl": f"{D}/-Users-dain-workspace-coderabbit-review-helper/agent-b52b1c09.jsonl",
    f"daaain-claude-code-log__{EF}.jsonl": f"{D}/-experiments-worktrees/{EF}.jsonl",
    "daaain-claude-code-log__agent-a36efb2a1231c41e2.jsonl": f"{D}/-experiments-worktrees/{EF}/subagents/agent-a36efb2a1231c41e2.jsonl",
    "daaain-claude-code-log__agent-a36efb2a1231c41e2.meta.json": f"{D}/-experiments-worktrees/{EF}/subagents/agent-a36efb2a1231c41e2.meta.json",
    "daaain-claude-code-log__94604a7b-062f-4369-bdf0-da948381c3e5.jsonl": f"{D}/-src-experiments-claude_p/94604a7b-062f-4369-bdf0-da948381c3e5.jsonl",
    "daaain-claude-code-log__03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl": f"{D}/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl",
    "daaain-claude-code-log__a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl": f"{D}/-experiments-ideas/a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl",
    "daaain-claude-code-log__image.jsonl": "daaain/dev-docs/messages/user/image.jsonl",
    "daaain-claude-code-log__edge_cases.jsonl": "daaain/test/test_data/edge_cases.jsonl",
    "daaain-claude-code-log__hook_attachments.jsonl": "daaain/test/test_data/hook_attachments.jsonl",
    f"marot-spotter__{AE}.jsonl": f"{M}/{AE}.jsonl",
    "marot-spotter__agent-acompact-946d2b.jsonl": f"{M}/{AE}/subagents/agent-acompact-946d2b.jsonl",
    "marot-spotter__agent-aac57f5.jsonl": f"{M}/{AE}/subagents/agent-aac57f5.jsonl",
    "marot-spotter__short.jsonl": f"{M}/short.jsonl",
}


def settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(home=tmp_path / "memd", transcripts_dir=tmp_path / "projects", **kw)


def lay_out_fixtures(shared: Path, dest: Path) -> None:
    src = shared / "fixtures" / "transcripts"
    names = {p.name for p in src.iterdir() if p.suffix in (".jsonl", ".json")}
    assert names == set(LAYOUT), "SOURCES.md and this layout disagree"
    for name, rel in LAYOUT.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / name, target)


def lay_out_own(dest: Path, root: Path) -> None:
    """tests/transcripts copied under dest, with @ROOT@ replaced by root."""
    for path in HERE.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".json"):
            target = dest / path.relative_to(HERE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes().replace(b"@ROOT@", str(root).encode()))


def own_items(name: str, root: Path):  # type: ignore[no-untyped-def]
    raw = (HERE / name).read_bytes().replace(b"@ROOT@", str(root).encode())
    return list(parse_items(raw.splitlines()))


def segments_by_session(state: State) -> dict[str, list[Segment]]:
    out: dict[str, list[Segment]] = {}
    for seg in state.pending_segments(limit=1000):
        out.setdefault(seg.session_id, []).append(seg)
    for segs in out.values():
        segs.sort(key=lambda s: s.index)
    return out


def texts(segs: list[Segment]) -> str:
    return "\n".join(t.text for s in segs for t in s.turns)


# --- fixtures, laid out as in their repositories


def test_fixtures_backfill_with_right_attribution(fixture_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "repos"
    lay_out_fixtures(fixture_root, root)
    state = State(tmp_path / "state.db")
    progress: list[int] = []
    report = backfill([root], state, settings(tmp_path), lambda r: progress.append(r.files))
    # 17 JSONL files, less agent-acompact (skipped); the .meta.json is not a transcript.
    assert report.files == 16 == report.files_total
    assert progress[-1] == 16
    assert report.bad_lines == 6  # all in edge_cases.jsonl
    by = segments_by_session(state)

    # Project from the lines' cwd, never from the folder name.
    def project(sid: str) -> set[str]:
        return {s.project for s in by[sid]}

    assert project("fe869ecb-c176-478f-9734-7e4b8ef12cff") == {
        resolve_project("/Users/dain/workspace/claude-code-log")
    }
    assert project("9e953218-585f-4692-89df-9e0747a31c68") == {
        resolve_project("/Users/dain/workspace/danieldemmel.me-next")
    }
    assert project("94604a7b-062f-4369-bdf0-da948381c3e5") == {"/src/experiments/claude_p"}
    assert project(AE) == {"/home/USER/projects/spotter-worktrees/spotter-4te"}
    assert project(EF) == {"-experiments/worktrees"}  # sanitized relative cwd kept as is
    assert project("hook-fix-001") == {"/home/cboos/proj"}

    # Subagents attach to their parent session, in both layouts.
    ef_turns = [t for s in by[EF] for t in s.turns]
    assert {t.agent_id for t in ef_turns if t.is_sidechain} == {"a36efb2a1231c41e2"}
    assert any(not t.is_sidechain for t in ef_turns)
    legacy = [t for s in by["741790a4-4fe2-4644-9a51-fb4482074060"] for t in s.turns]
    assert legacy and all(t.agent_id == "b52b1c09" and t.is_sidechain for t in legacy)
    assert project("741790a4-4fe2-4644-9a51-fb4482074060") == {
        "/Users/dain/workspace/coderabbit-review-helper"
    }
    ae_turns = [t for s in by[AE] for t in s.turns]
    assert {t.agent_id for t in ae_turns if t.is_sidechain} == {"aac57f5"}

    # The compaction summarizer and the Warmup sidechain are not ingested.
    acompact = fixture_root / "fixtures/transcripts/marot-spotter__agent-acompact-946d2b.jsonl"
    acompact_uuids = {json.loads(line)["uuid"] for line in acompact.read_text().splitlines()}
    all_uuids = {u for segs in by.values() for s in segs for t in s.turns for u in t.uuids}
    assert not acompact_uuids & all_uuids
    assert "58edcfae-5291-436c-91e4-54fbb188a0ca" not in by  # Warmup only

    # Compaction closed a segment; the rest closed as finished (ingest).
    assert [s.reason for s in by[AE]] == ["compaction", "ingest"]
    assert by[AE][1].turns[0].is_compact_summary
    # The image and metadata-only files gave nothing broken; attachments are not conversation.
    assert "clmail" not in texts(by["hook-fix-001"])
    assert set(by) >= {"edge_cases", "todowrite_session", "71c9afe9-d9cc-4583-86b3-e62ba682b83a"}
    assert "03eb5929-52b3-4b13-ada3-b93ae35806b8" in by

    # Running it twice adds nothing.
    before = state.counts()
    again = backfill([root], state, settings(tmp_path))
    assert (again.turns, again.segments) == (0, 0)
    assert state.counts() == before


def test_units_group_subagents_with_their_session(fixture_root: Path, tmp_path: Path) -> None:
    lay_out_fixtures(fixture_root, tmp_path)
    units = {Path(u[0]).name: [Path(p).name for p in u] for u in transcript_units([tmp_path])}
    assert units[f"{EF}.jsonl"] == [f"{EF}.jsonl", "agent-a36efb2a1231c41e2.jsonl"]
    assert units[f"{AE}.jsonl"] == [f"{AE}.jsonl", "agent-aac57f5.jsonl"]  # no acompact
    assert units["agent-b52b1c09.jsonl"] == ["agent-b52b1c09.jsonl"]


# --- hand-written transcripts


def test_own_transcripts_backfill(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    projects = tmp_path / "projects" / "-some-encoded-name"
    lay_out_own(projects, tmp_path)
    state = State(tmp_path / "state.db")
    report = backfill([tmp_path / "projects"], state, settings(tmp_path))
    by = segments_by_session(state)
    everything = "\n".join(
        [texts(s) for s in by.values()]
        + [o for segs in by.values() for s in segs for t in s.turns for o in t.tool_outputs]
    )
    assert "SHOULD-NOT-APPEAR" not in everything
    assert "INJECTED" not in everything
    assert "memd-run-0001" not in by  # memd's own extraction run
    # Project = git root above the cwd, for parent and worktree subagent alike.
    assert {s.project for segs in by.values() for s in segs} == {str(repo)}
    # Legacy and current subagents attach to their sessions, ordered by time.
    legacy = [t for s in by["legacy-0001"] for t in s.turns]
    assert [t.uuid for t in legacy] == ["l-u1", "l-a1", "l-s1", "l-s2", "l-s4", "l-a2"]
    assert legacy[3].tool_outputs == ["8192"]
    assert legacy[1].tool_outputs == ["max_user_watches defaults to 8192 on old kernels."]
    assert len(by["legacy-0001"]) == 1
    current = [t for s in by["current-0001"] for t in s.turns]
    assert [t.uuid for t in current] == ["k-u1", "k-a1", "k-s1", "k-s2", "k-a2"]
    assert current[1].tool_outputs == ["Looks fine; add an index on status."]
    # Resume duplicates: replayed lines appear once, the new file keeps only its new turns.
    resumed = [t.uuid for s in by["resume-0001"] for t in s.turns]
    assert resumed == ["r-u1", "r-a1", "r-a3", "r-u3", "r-a4"]
    assert [t.uuid for s in by["resume-0002"] for t in s.turns] == ["r2-u1", "r2-a1"]
    # Compaction closes a segment; microcompaction does not.
    assert [[t.uuid for t in s.turns] for s in by["compact-0001"]] == [
        ["c-u1", "c-a1", "c-u2", "c-a2"],
        ["c-s1", "c-u3", "c-a3"],
    ]
    assert [s.reason for s in by["compact-0001"]] == ["compaction", "ingest"]
    # The partial last line is not consumed.
    assert [t.uuid for s in by["partial-0001"] for t in s.turns] == ["p-u1", "p-a1"]
    assert "我们决定使用 SQLite" in texts(by["cjk-0001"])
    assert report.bad_lines == 11 + 1  # garbage.jsonl + the unfinished tail of partial.jsonl
    assert report.sessions == len(by) + 1  # memd-run-0001 was seen but ignored
    assert backfill([tmp_path / "projects"], state, settings(tmp_path)).turns == 0


def test_closing_rules(tmp_path: Path) -> None:
    now = [1000.0]
    state = State(tmp_path / "state.db")
    tracker = SessionTracker(
        settings(tmp_path, session_idle_seconds=60, segment_max_turns=2), state, lambda: now[0]
    )
    closed: list[str] = []
    tracker.on_closed = closed.extend
    items = own_items("resume.jsonl", tmp_path)
    tracker.feed(items[:2])  # r-u1, r-a1
    assert [t.uuid for t in tracker.open_turns("resume-0001")] == ["r-u1", "r-a1"]
    assert state.counts()["open"] == 1
    # Idle: nothing before the timeout, then the segment closes.
    assert tracker.close_idle(now[0] + 59) == []
    now[0] += 61
    [idle] = tracker.close_idle()
    assert closed == [idle] and state.segment_info(idle)["reason"] == "idle"  # type: ignore[index]
    # Lines after a close open the next segment; the size cap closes it before a new prompt.
    tracker.feed(items[2:])  # r-a2 (joins r-a1's message), r-u2, r-a3, replays, r-u3, r-a4
    segs = state.pending_segments(limit=10)
    assert [s.reason for s in segs] == ["idle", "size-cap"]
    assert [t.uuid for t in segs[1].turns] == ["r-a2", "r-a3"]  # r-u2 folded into r-a2
    assert [t.uuid for t in tracker.open_turns("resume-0001")] == ["r-u3", "r-a4"]
    # Session end closes what is open; a second close is a no-op.
    key = tracker.close_session("resume-0001")
    assert key is not None and tracker.close_session("resume-0001") is None
    assert state.counts() == {"open": 0, "pending": 3, "extracted": 0, "failed": 0}
    # Each segment is extracted once.
    for seg in state.pending_segments(limit=10):
        state.mark_extracted(seg.key)
    assert state.pending_segments(limit=10) == []
    tracker.feed(items)  # a full replay adds nothing
    assert state.counts()["open"] == 0 and tracker.open_turns("resume-0001") == []


def test_restart_resumes_the_open_segment(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    items = own_items("cjk.jsonl", tmp_path)
    first = SessionTracker(settings(tmp_path), State(path))
    first.feed(items[:2])  # the user prompt and a thinking-only line
    first.state.close()
    state = State(path)
    second = SessionTracker(settings(tmp_path), state)
    second.feed(items[2:])
    key = second.close_session("cjk-0001")
    assert key is not None
    seg = state.segment(key)
    assert seg is not None
    assert [t.uuid for t in seg.turns] == ["cjk-u1", "cjk-a1", "cjk-a4"]
    assert seg.turns[1].uuids == ["cjk-a1", "cjk-a2", "cjk-a3", "cjk-u2"]
    assert seg.turns[1].text.startswith("好的")


def test_a_failed_commit_leaves_nothing_behind(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    tracker = SessionTracker(settings(tmp_path), state)
    items = own_items("compaction.jsonl", tmp_path)

    def fail() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError):
        tracker.feed(items, commit=fail)
    assert state.counts() == {"open": 0, "pending": 0, "extracted": 0, "failed": 0}
    assert not state.seen("c-u1")
    tracker.feed(items)  # the same lines go through once the problem is gone
    assert [s.reason for s in state.pending_segments()] == ["compaction"]
    assert [t.uuid for t in tracker.open_turns("compact-0001")] == ["c-s1", "c-u3", "c-a3"]


def test_extraction_runs_are_ignored_even_later(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    tracker = SessionTracker(settings(tmp_path), state)
    items = own_items("extraction_run.jsonl", tmp_path)
    tracker.feed(items[:1])
    tracker.feed(items[1:])
    later = SessionTracker(settings(tmp_path), state)  # after a restart
    line = {
        "type": "user",
        "uuid": "m-u9",
        "sessionId": "memd-run-0001",
        "message": {"content": "a later line of the same run"},
    }
    later.feed(parse_items([json.dumps(line)]))
    assert later.close_session("memd-run-0001") is None
    assert state.counts() == {"open": 0, "pending": 0, "extracted": 0, "failed": 0}
    assert MEMD_EXTRACTION_PROMPT_MARKER == "<memd-extraction-request>"


# --- crash safety: kill -9 during ingestion, many times

INGEST = """
import sys
from pathlib import Path
from memd.ingest.backfill import backfill
from memd.settings import Settings
from memd.state import State
home = Path(sys.argv[1])
state = State(home / "state.db")
s = Settings(home=home, transcripts_dir=home / "none", segment_max_turns=int(sys.argv[3]))
print("start", flush=True)
backfill([sys.argv[2]], state, s)
print("done", flush=True)
"""


def snapshot(state: State) -> list[tuple[str, str, str, list[list[str]]]]:
    segs = state.pending_segments(limit=10_000)
    return sorted((s.key, s.project, s.reason, [t.uuids for t in s.turns]) for s in segs)


def many_sessions(src: Path, dest: Path, copies: int) -> None:
    """Copies of the hand-written transcripts with fresh session ids and uuids."""
    for i in range(copies):
        d = dest / f"-copy-{i}"
        lay_out_own(d, dest)
        for f in d.rglob("*.jsonl"):
            raw = f.read_bytes()
            raw = raw.replace(b'"sessionId":"', f'"sessionId":"c{i}-'.encode()).replace(
                b'"uuid":"', f'"uuid":"c{i}-'.encode()
            )
            f.write_bytes(raw)


@pytest.mark.slow
def test_kill_9_during_ingestion_loses_and_doubles_nothing(tmp_path: Path) -> None:
    src = tmp_path / "transcripts"
    many_sessions(HERE, src, copies=30)
    ref_home = tmp_path / "ref"
    ref = subprocess.Popen(
        [sys.executable, "-c", INGEST, str(ref_home), str(src), "4"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert ref.stdout is not None
    assert ref.stdout.readline().strip() == "start"
    t0 = time.monotonic()
    assert ref.stdout.readline().strip() == "done"
    work = time.monotonic() - t0  # how long the ingestion itself takes on this machine
    ref.wait()
    ref.stdout.close()
    expected = snapshot(State(ref_home / "state.db"))
    assert len(expected) > 100

    home = tmp_path / "crashy"
    rng = random.Random(7)
    kills = 0
    partial = 0
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", INGEST, str(home), str(src), "4"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "start"
        time.sleep(rng.uniform(0.05, 0.9) * work)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        proc.stdout.close()
        if (home / "state.db").exists():
            got = snapshot(State(home / "state.db"))
            assert all(g in expected for g in got)  # never a segment the clean run lacks
            partial += 0 < len(got) < len(expected)
    final = subprocess.run(
        [sys.executable, "-c", INGEST, str(home), str(src), "4"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "done" in final.stdout
    assert kills >= 3 and partial >= 2  # killed in the middle of the work, more than once
    assert snapshot(State(home / "state.db")) == expected


def test_hard_size_cap_and_idle_after_restart(tmp_path: Path) -> None:
    now = [5000.0]
    path = tmp_path / "state.db"
    s = settings(tmp_path, segment_max_turns=2, session_idle_seconds=100)
    tracker = SessionTracker(s, State(path), lambda: now[0])
    answers = [
        json.dumps(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "sessionId": "loop-1",
                "cwd": str(tmp_path),
                "message": {"id": f"m{i}", "content": [{"type": "text", "text": f"step {i}"}]},
            }
        )
        for i in range(15)
    ]
    result = tracker.feed(parse_items(answers))
    # No prompt to close before: the hard cap (max + 10) closes a runaway assistant loop.
    assert len(result.closed) == 1
    assert len(tracker.state.segment_turns(result.closed[0])) == 12
    assert [t.uuid for t in tracker.open_turns("loop-1")] == ["a12", "a13", "a14"]
    tracker.state.close()
    # After a restart the idle clock comes from state.
    later = SessionTracker(s, State(path), lambda: now[0])
    assert later.close_idle(now[0] + 50) == []
    [key] = later.close_idle(now[0] + 101)
    seg = later.state.segment(key)
    assert seg is not None and seg.reason == "idle" and seg.project == str(tmp_path)
    assert [t.uuid for t in seg.turns] == ["a12", "a13", "a14"]


def test_two_processes_writing_one_state_stay_consistent(tmp_path: Path) -> None:
    """Two connections (as two processes would have) interleave on one session."""
    path = tmp_path / "state.db"
    a = SessionTracker(settings(tmp_path), State(path))
    b = SessionTracker(settings(tmp_path), State(path))

    def user(uuid: str) -> list:  # type: ignore[type-arg]
        obj = {"type": "user", "uuid": uuid, "sessionId": "two", "message": {"content": uuid}}
        return list(parse_items([json.dumps(obj)]))

    a.feed(user("u1"))
    b.feed(user("u2"))
    a.feed(user("u3"))  # a's cached segment is stale: it must see u2
    b.feed(user("u1"))  # and b must see that u1 was already taken
    key = b.close_session("two")
    assert key is not None
    seg = a.state.segment(key)
    assert seg is not None and [t.uuid for t in seg.turns] == ["u1", "u2", "u3"]
    assert a.close_session("two") is None


def test_open_segments_are_stored_redacted(tmp_path: Path) -> None:
    """A secret in a prompt or a tool output never reaches state.db, not even while it waits."""
    secret = "sk-ant-api03-" + "Zq8wX2vN7mR4tY6uP1sK9dL3fH5jG0cBAA"
    lines = [
        json.dumps(
            {
                "type": "user",
                "uuid": "s-u1",
                "sessionId": "sec-0001",
                "timestamp": "2026-11-30T10:00:00Z",
                "cwd": str(tmp_path),
                "message": {"role": "user", "content": f"Deploy with the key {secret} please."},
            }
        ),
        json.dumps(
            {
                "type": "user",
                "uuid": "s-u2",
                "sessionId": "sec-0001",
                "timestamp": "2026-11-30T10:00:01Z",
                "cwd": str(tmp_path),
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": f"KEY={secret}"}
                    ],
                },
            }
        ),
    ]
    path = tmp_path / "state.db"
    state = State(path)
    tracker = SessionTracker(settings(tmp_path), state)
    tracker.feed(list(parse_items(lines)))
    assert tracker.open_turns("sec-0001")
    for file in tmp_path.glob("state.db*"):
        assert secret.encode() not in file.read_bytes(), file
    state.close()
    # What a restarted daemon reads back is the redacted turn.
    again = SessionTracker(settings(tmp_path), State(path)).open_turns("sec-0001")
    assert "[REDACTED:anthropic_key]" in again[0].text and secret not in again[0].text
    for file in tmp_path.glob("state.db*"):
        assert secret.encode() not in file.read_bytes(), file
