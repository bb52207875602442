"""The parser on transcripts recorded from the real Claude Code CLI (2.1.197 and 2.1.332).

Recorded by tests/e2e/record_transcripts.py with memd's hooks on, so memd's own context is in
them (``hook_success`` and ``hook_additional_context`` attachments) and must never become a turn.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memd.ingest.transcript import SKIP_TYPES, ParseStats, Signal, parse_items, parse_lines

ROOT = Path(__file__).parent / "real_transcripts"
VERSIONS = ("2.1.197", "2.1.332")
FILES = [
    ROOT / f"claude-code-{v}" / name for v in VERSIONS for name in ("tools.jsonl", "compact.jsonl")
]
CONVERSATION = {"user", "assistant", "system"}
INJECTED = ("memd-context", "memories from earlier sessions", "Orders use PostgreSQL, not MongoDB")


def line_types(path: Path) -> set[str]:
    return {json.loads(x)["type"] for x in path.read_text().splitlines() if x.strip()}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_every_line_type_is_handled(path: Path) -> None:
    assert line_types(path) <= CONVERSATION | SKIP_TYPES, line_types(path) - SKIP_TYPES
    stats = ParseStats()
    items = list(parse_items(path.read_bytes().splitlines(), stats))
    assert stats.bad_lines == 0
    assert stats.lines == stats.skipped_lines + stats.turns + stats.signals
    assert items
    # memd's own context is in the file (hook attachments) but in no turn.
    assert "<memd-context>" in path.read_text()
    for turn in parse_lines(path.read_bytes().splitlines()):
        for needle in INJECTED:
            assert needle not in turn.text, turn
            assert all(needle not in o for o in turn.tool_outputs), turn


@pytest.mark.parametrize("version", VERSIONS)
def test_tool_calls_resume_and_continue(version: str) -> None:
    turns = parse_lines((ROOT / f"claude-code-{version}" / "tools.jsonl").read_bytes().splitlines())
    users = [t.text for t in turns if t.role == "user"]
    assert users == [
        "The orders cart total is wrong for [1, 2, 3]: fix cart.py.",
        "We decided to keep prices in cents.",
        "TODO: still need a test for empty carts.",
    ]
    tools = [c.name for t in turns for c in t.tools]
    assert tools == ["Bash", "Read", "Edit", "Bash"]
    outputs = [o for t in turns for o in t.tool_outputs]
    assert outputs[0] == "3" and outputs[-1] == "6", outputs
    assert any("caused by prices[:-1]" in t.text for t in turns if t.role == "assistant")
    assert len({t.session_id for t in turns}) == 1
    assert all(t.entrypoint == "sdk-cli" and t.cwd.startswith("@ROOT@") for t in turns)


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction(version: str) -> None:
    lines = (ROOT / f"claude-code-{version}" / "compact.jsonl").read_bytes().splitlines()
    items = list(parse_items(lines))
    signals = [i for i in items if isinstance(i, Signal)]
    assert [s.kind for s in signals] == ["compaction"]
    turns = parse_lines(lines)
    summaries = [t for t in turns if t.is_compact_summary]
    assert len(summaries) == 1
    users = [t.text for t in turns if t.role == "user" and not t.is_compact_summary]
    assert users[0] == "Which database do the orders use?"
    assert users[-1] == "We decided to switch the queue to RabbitMQ."
    assert [u for u in users if u.startswith("Step ")] == [
        f"Step {i} on the orders service." for i in range(4)
    ]
