"""The transcript parser, on real fixtures and on transcripts written for these tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memd.ingest.transcript import (
    MAX_TOOL_OUTPUT_CHARS,
    MEMD_CONTEXT_HEADER,
    MEMD_CONTEXT_MARKER,
    ParseStats,
    Signal,
    parse_items,
    parse_line,
    parse_lines,
    strip_injected,
)

HERE = Path(__file__).parent / "transcripts"
FIXTURES = "fixtures/transcripts"


def own(name: str, root: str = "/nonexistent-root") -> list[bytes]:
    """A hand-written transcript from tests/transcripts, with @ROOT@ filled in."""
    raw = (HERE / name).read_bytes().replace(b"@ROOT@", root.encode())
    return raw.splitlines(keepends=True)


def fixture(shared: Path, name: str) -> list[bytes]:
    return (shared / FIXTURES / name).read_bytes().splitlines(keepends=True)


def all_text(turns) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(
        [t.text for t in turns] + [o for t in turns for o in t.tool_outputs + t.tool_errors]
    )


# --- real fixtures


def test_every_fixture_parses_and_counts(fixture_root: Path) -> None:
    files = sorted((fixture_root / FIXTURES).glob("*.jsonl"))
    assert len(files) == 17
    for path in files:
        stats = ParseStats()
        turns = parse_lines(path.read_bytes().splitlines(), stats)
        assert stats.lines > 0, path.name
        assert stats.lines == stats.bad_lines + stats.skipped_lines + stats.turns + stats.signals
        for t in turns:
            assert t.role in ("user", "assistant"), (path.name, t.role)
            assert t.uuid and t.uuid == t.uuids[0]
            assert t.session_id
            assert all(len(o) <= MAX_TOOL_OUTPUT_CHARS for o in t.tool_outputs + t.tool_errors)
        if "edge_cases" not in path.name:
            assert stats.bad_lines == 0, path.name


def test_metadata_only_files_give_no_turns(fixture_root: Path) -> None:
    for name in (
        "daaain-claude-code-log__4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl",  # summary only
        "daaain-claude-code-log__a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl",  # snapshots only
    ):
        stats = ParseStats()
        assert parse_lines(fixture(fixture_root, name), stats) == []
        assert stats.bad_lines == 0 and stats.skipped_lines == stats.lines


def test_malformed_lines_are_counted_not_fatal(fixture_root: Path) -> None:
    stats = ParseStats()
    turns = parse_lines(fixture(fixture_root, "daaain-claude-code-log__edge_cases.jsonl"), stats)
    # "massive error", 42, [1], {"silly":...}, "message":"error", and the misspelled "contenst".
    assert stats.bad_lines == 6
    texts = all_text(turns)
    assert "中文, العربية, русский, 🎉" in texts
    assert "Command not found" in texts  # the is_error tool result
    assert any(t.tool_errors for t in turns)
    # The last line has no trailing newline and is still read.
    assert stats.lines == 19


def test_hook_attachments_are_never_conversation(fixture_root: Path) -> None:
    stats = ParseStats()
    turns = parse_lines(
        fixture(fixture_root, "daaain-claude-code-log__hook_attachments.jsonl"), stats
    )
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Run the test suite"),
        ("assistant", "Running tests."),
    ]
    assert "clmail" not in all_text(turns)
    assert stats.skipped_lines == 5


def test_streamed_assistant_lines_group_by_message_id(fixture_root: Path) -> None:
    lines = fixture(fixture_root, "marot-spotter__short.jsonl")
    by_id: dict[str, list[str]] = {}
    for raw in lines:
        obj = json.loads(raw)
        if obj.get("type") == "assistant":
            by_id.setdefault(obj["message"]["id"], []).append(obj["uuid"])
    turns = parse_lines(lines)
    grouped = {t.message_id: t for t in turns if t.role == "assistant"}
    assert set(grouped) <= set(by_id)
    for mid, turn in grouped.items():
        assert turn.uuid == by_id[mid][0]
        assert turn.uuids[: len(by_id[mid])] == by_id[mid] or set(by_id[mid]) <= set(turn.uuids)
    # Tool results join the assistant turn that made the calls, with their errors.
    assert sum(len(t.tool_errors) for t in turns) == 2


def test_thinking_and_images_are_dropped(fixture_root: Path) -> None:
    name = "daaain-claude-code-log__fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl"
    lines = fixture(fixture_root, name)
    thinking = [
        b["thinking"]
        for raw in lines
        for obj in [json.loads(raw)]
        if isinstance(obj.get("message"), dict) and isinstance(obj["message"].get("content"), list)
        for b in obj["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "thinking"
    ]
    assert len(thinking) == 20
    turns = parse_lines(lines)
    texts = all_text(turns)
    assert not any(t[:80] in texts for t in thinking if len(t) > 40)
    assert sum(len(t.tool_errors) for t in turns) == 6

    image = parse_lines(fixture(fixture_root, "daaain-claude-code-log__image.jsonl"))
    assert len(image) == 1 and image[0].text
    assert len(image[0].text) < 2000  # the 198 KB base64 block is gone


def test_compaction_boundary_is_a_signal(fixture_root: Path) -> None:
    name = "marot-spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    stats = ParseStats()
    items = list(parse_items(fixture(fixture_root, name), stats))
    signals = [i for i in items if isinstance(i, Signal)]
    assert [(s.kind, s.uuid) for s in signals] == [
        ("compaction", "434dc859-6299-4713-8613-d28662692f06")
    ]
    at = items.index(signals[0])
    summary = items[at + 1]
    assert not isinstance(summary, Signal) and summary.is_compact_summary
    assert summary.text.startswith("This session is being continued")
    assert stats.skipped_lines >= 1697  # progress lines
    turns = parse_lines(fixture(fixture_root, name))
    assert sum(len(t.tool_errors) for t in turns) == 12


def test_headless_and_subagent_envelopes(fixture_root: Path) -> None:
    sub = parse_lines(
        fixture(fixture_root, "daaain-claude-code-log__agent-a36efb2a1231c41e2.jsonl")
    )
    assert sub and all(t.is_sidechain and t.agent_id == "a36efb2a1231c41e2" for t in sub)
    assert {t.session_id for t in sub} == {"ef958aa1-0e93-49f0-bb71-150f63befcd1"}
    assert {t.entrypoint for t in sub} == {"cli"}
    headless = parse_lines(
        fixture(fixture_root, "daaain-claude-code-log__94604a7b-062f-4369-bdf0-da948381c3e5.jsonl")
    )
    assert [t.role for t in headless] == ["user", "assistant"]
    assert headless[0].cwd == "/src/experiments/claude_p"


# --- hand-written transcripts


def test_cjk_text_round_trips() -> None:
    turns = parse_lines(own("cjk.jsonl"))
    assert [t.role for t in turns] == ["user", "assistant", "assistant"]
    assert turns[0].text.startswith("我们决定使用 SQLite 作为状态存储")
    assert "🎉" in turns[0].text and "日本語" in turns[0].text
    first = turns[1]
    assert first.uuid == "cjk-a1" and first.uuids == ["cjk-a1", "cjk-a2", "cjk-a3", "cjk-u2"]
    assert first.text == "好的，我会用 SQLite（WAL 模式）保存状态。"
    assert first.tools[0].name == "Bash" and "状态.db" in first.tools[0].summary
    assert first.tool_outputs == ["wal"]
    assert "العربية" in turns[2].text


def test_garbage_lines() -> None:
    stats = ParseStats()
    turns = parse_lines(own("garbage.jsonl"), stats)
    assert [t.text for t in turns] == ["first real prompt", "a real answer after the garbage"]
    assert stats.bad_lines == 11
    assert stats.lines == 15  # two blank lines are neither bad nor turns


def test_injected_context_is_stripped() -> None:
    turns = parse_lines(own("attachments.jsonl"))
    texts = all_text(turns)
    assert "INJECTED" not in texts
    assert [t.text for t in turns if t.role == "user"] == [
        "Which database do we use now?",
        "Also check the WAL checkpoint.",
        "What's next?",
    ]


def test_strip_injected_forms() -> None:
    assert MEMD_CONTEXT_MARKER == "<memd-context"
    assert strip_injected("<memd-context>\n- a\n</memd-context>\nhello") == "hello"
    assert strip_injected('a <memd-context v="1">x</memd-context> b') == "a b"
    assert strip_injected("hello\n<memd-context>\nno close") == "hello"
    assert strip_injected(f"{MEMD_CONTEXT_HEADER}\n- fact") == ""
    assert strip_injected(f"q?\n{MEMD_CONTEXT_HEADER}\n- fact") == "q?"
    # Only a header at the start of a line counts.
    assert strip_injected(f"quoting '{MEMD_CONTEXT_HEADER}' here") != ""
    assert strip_injected("<system-reminder>r</system-reminder>keep") == "keep"


def test_noise_is_skipped() -> None:
    stats = ParseStats()
    turns = parse_lines(own("noise.jsonl"), stats)
    assert "SHOULD-NOT-APPEAR" not in all_text(turns)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "The real question: why does the tailer lag?"),
        ("assistant", "Because events coalesce; read to EOF on each one."),
    ]
    # The assistant turn starts at the thinking-only line and folds the text line in.
    assert turns[1].uuid == "n-a1" and turns[1].uuids == ["n-a1", "n-a2"]
    assert stats.bad_lines == 0


def test_compaction_and_microcompaction() -> None:
    items = list(parse_items(own("compaction.jsonl")))
    signals = [i for i in items if isinstance(i, Signal)]
    assert [s.uuid for s in signals] == ["c-b1"]  # microcompact is not a boundary
    summary = next(i for i in items if getattr(i, "is_compact_summary", False))
    assert summary.uuid == "c-s1"


def test_parse_line_accepts_str_and_bytes_and_missing_fields() -> None:
    line = '{"type":"user","message":{"role":"user","content":"hi"},"sessionId":"s"}'
    a, b = parse_line(line), parse_line(line.encode())
    assert a is not None and b is not None and not isinstance(a, Signal)
    assert a.text == b.text == "hi"
    assert a.uuid == b.uuid and a.uuid.startswith("line-")  # stable id for a line without one
    # A missing sessionId is filled from the hint (the file's session id).
    c = parse_line('{"type":"user","message":{"content":"x"}}', session_hint="file-sid")
    assert c is not None and c.session_id == "file-sid"


def test_fast_skip_reads_only_the_top_level_type() -> None:
    nested = {
        "type": "progress",
        "data": {"message": {"type": "user", "message": {"role": "user", "content": "no"}}},
    }
    stats = ParseStats()
    assert parse_line(json.dumps(nested, separators=(",", ":")), stats) is None
    assert stats.skipped_lines == 1
    # A user line whose text quotes a progress type, and one whose type comes after a nested
    # object, are both still parsed.
    quoted = {"type": "user", "message": {"content": 'see "type":"progress" lines'}}
    t = parse_line(json.dumps(quoted, separators=(",", ":")))
    assert t is not None and not isinstance(t, Signal) and "progress" in t.text
    late = '{"message":{"type":"message","role":"assistant","id":"m","content":[{"type":"text","text":"late"}]},"type":"assistant","uuid":"u"}'
    t2 = parse_line(late)
    assert t2 is not None and not isinstance(t2, Signal) and t2.text == "late"


@pytest.mark.parametrize("content", [None, 5, {"a": 1}])
def test_bad_content_shapes(content: object) -> None:
    stats = ParseStats()
    line = json.dumps({"type": "user", "uuid": "u", "message": {"content": content}})
    assert parse_line(line, stats) is None
    assert stats.bad_lines == 1


def test_tool_outputs_are_short() -> None:
    long = "x" * 5000
    lines = [
        json.dumps(
            {
                "type": "assistant",
                "uuid": "a",
                "sessionId": "s",
                "message": {
                    "id": "m",
                    "content": [
                        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": long}}
                    ],
                },
            }
        ),
        json.dumps(
            {
                "type": "user",
                "uuid": "r",
                "sessionId": "s",
                "message": {
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": long}]
                },
            }
        ),
    ]
    [turn] = parse_lines(lines)
    assert len(turn.tool_outputs[0]) == MAX_TOOL_OUTPUT_CHARS
    assert len(turn.tools[0].summary) <= 200
    assert turn.uuids == ["a", "r"]


def test_tool_result_joins_its_call_across_a_long_subagent_run() -> None:
    def obj(uuid: str, role: str, content: object, agent: str = "", mid: str = "") -> str:
        message: dict[str, object] = {"content": content}
        if mid:
            message["id"] = mid
        extra = {"isSidechain": True, "agentId": agent} if agent else {}
        return json.dumps(
            {"type": role, "uuid": uuid, "sessionId": "s", "message": message, **extra}
        )

    lines = [
        obj("p1", "user", "start a long agent"),
        obj(
            "p2",
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Task", "input": {}}],
            mid="m1",
        ),
    ]
    for i in range(40):  # the subagent's own prompts and answers, interleaved in the session
        lines.append(obj(f"s{i}u", "user", f"step {i}", agent="a1"))
        lines.append(obj(f"s{i}a", "assistant", [{"type": "text", "text": "ok"}], "a1", f"sm{i}"))
    lines.append(
        obj("p3", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}])
    )
    turns = parse_lines(lines)
    parent = [t for t in turns if not t.agent_id]
    assert [t.uuid for t in parent] == ["p1", "p2"]
    assert parent[1].tool_outputs == ["done"] and parent[1].uuids == ["p2", "p3"]
    assert len(turns) == 2 + 80


def test_a_slash_command_with_arguments_is_the_users_request() -> None:
    def user(text: str) -> str:
        line = {
            "type": "user",
            "sessionId": "s",
            "uuid": "u1",
            "message": {"role": "user", "content": text},
        }
        got = parse_line(json.dumps(line))
        return got.text if got is not None and not isinstance(got, Signal) else ""

    typed = (
        "<command-message>orchestrator is running…</command-message>\n"
        "<command-name>/orchestrator</command-name>\n"
        "<command-args>create TODO app by Next.js</command-args>"
    )
    assert user(typed) == "/orchestrator create TODO app by Next.js"
    scoped = "<command-name>/opsx:explore</command-name><command-args>is the PR simple enough?</command-args>"
    assert user(scoped) == "/opsx:explore is the PR simple enough?"
    # No arguments, or Claude Code's own settings commands: nothing the user asked for.
    assert user("<command-name>/simplify</command-name>\n<command-args></command-args>") == ""
    assert user("<command-name>/model</command-name><command-args>opus</command-args>") == ""
    compact = "<command-name>/compact</command-name><command-args>keep the API notes</command-args>"
    assert user(compact) == ""
    # memd's own commands: the command stores or forgets what they carry
    for own in ("/remember", "/memd:forget"):
        line = f"<command-name>{own}</command-name><command-args>we use pnpm</command-args>"
        assert user(line) == ""
