"""Record real Claude Code transcripts as parser fixtures: ``python tests/e2e/record_transcripts.py``.

For each CLI version of the harness, two sessions run through the real CLI, the fake API and a
real daemon with memd's hooks (so memd's own context is in them):

- ``tools.jsonl``: a bug fix with real tool calls (Bash, Read, Edit), then ``--resume`` and
  ``--continue`` turns (the default, Opus, model: hook context as ``system`` entries);
- ``compact.jsonl``: five turns, ``/compact``, one turn after it (Sonnet: ``<system-reminder>``).

Scrubbed to stay small and machine-independent: the scratch root becomes ``@ROOT@`` (``-ROOT-`` in a project directory name), and in
metadata lines (anything but user/assistant lines and hook attachments) long strings are cut to
200 characters and long lists to 3 items. Written to ``tests/real_transcripts/claude-code-<version>/``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from claude_harness import SONNET, VERSIONS, World, install_claude, mangle  # noqa: E402

OUT = HERE.parent / "real_transcripts"
KEEP_WHOLE_ATTACHMENTS = {"hook_additional_context", "hook_success"}


def trim(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= 200 else value[:200] + "…[trimmed]"
    if isinstance(value, list):
        return [trim(v) for v in value[:3]]
    if isinstance(value, dict):
        return {k: trim(v) for k, v in value.items()}
    return value


def scrub_line(line: str, root: str) -> str:
    line = line.replace(root, "@ROOT@").replace(mangle(Path(root)), "-ROOT-")
    obj = json.loads(line)
    kind = obj.get("type")
    attachment = obj.get("attachment") if kind == "attachment" else None
    whole = kind in ("user", "assistant") or (
        isinstance(attachment, dict) and attachment.get("type") in KEEP_WHOLE_ATTACHMENTS
    )
    if not whole:
        obj = trim(obj)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def save(world: World, session_id: str, dest: Path) -> None:
    lines = world.transcript(session_id).read_text().splitlines()
    dest.write_text("".join(scrub_line(x, str(world.root)) + "\n" for x in lines if x.strip()))
    print(f"{dest}: {len(lines)} lines")


def record(version: str) -> None:
    world = World(install_claude(version))
    world.start_daemon()
    try:
        out = OUT / f"claude-code-{version}"
        out.mkdir(parents=True, exist_ok=True)
        world.memd_ok("add", "--kind", "decision", "Orders use PostgreSQL, not MongoDB.")
        cart = world.project / "cart.py"
        cart.write_text("def total(prices):\n    return sum(prices[:-1])\n")
        check = "python3 -c 'import cart; print(cart.total([1, 2, 3]))'"
        prompt = "The orders cart total is wrong for [1, 2, 3]: fix cart.py."
        world.api.script(
            [
                {
                    "when": "toolu_rec_run2",
                    "reply": {"text": "The bug was caused by prices[:-1]; fixed by sum(prices)."},
                },
                {
                    "when": "toolu_rec_edit",
                    "reply": {
                        "tool_use": {
                            "id": "toolu_rec_run2",
                            "name": "Bash",
                            "input": {"command": check, "description": "check"},
                        }
                    },
                },
                {
                    "when": "toolu_rec_read",
                    "reply": {
                        "tool_use": {
                            "id": "toolu_rec_edit",
                            "name": "Edit",
                            "input": {
                                "file_path": str(cart),
                                "old_string": "sum(prices[:-1])",
                                "new_string": "sum(prices)",
                            },
                        }
                    },
                },
                {
                    "when": "toolu_rec_run1",
                    "reply": {
                        "tool_use": {
                            "id": "toolu_rec_read",
                            "name": "Read",
                            "input": {"file_path": str(cart)},
                        }
                    },
                },
                {
                    "when": prompt,
                    "reply": {
                        "text": "Running it first.",
                        "tool_use": {
                            "id": "toolu_rec_run1",
                            "name": "Bash",
                            "input": {"command": check, "description": "check"},
                        },
                    },
                },
                {
                    "when": "detailed summary",
                    "reply": {"text": "Summary: orders cart work so far."},
                },
            ]
        )
        tools = world.session(prompt, tools=("Bash", "Read", "Edit")).check()
        world.session("We decided to keep prices in cents.", resume=tools.session_id).check()
        world.session("TODO: still need a test for empty carts.", cont=True).check()
        save(world, tools.session_id, out / "tools.jsonl")

        first = world.session("Which database do the orders use?", model=SONNET).check()
        for i in range(4):
            world.session(
                f"Step {i} on the orders service.", resume=first.session_id, model=SONNET
            ).check()
        world.session("/compact", resume=first.session_id, model=SONNET).check()
        world.session(
            "We decided to switch the queue to RabbitMQ.", resume=first.session_id, model=SONNET
        ).check()
        save(world, first.session_id, out / "compact.jsonl")
    finally:
        world.close()


if __name__ == "__main__":
    for v in sys.argv[1:] or VERSIONS:
        record(v)
