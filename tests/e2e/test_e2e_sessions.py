"""memd through the real Claude Code CLI: memory across sessions, resume, compaction, tools,
its own context never re-learned, secrets, and a stopped daemon. Both CLI versions."""

from __future__ import annotations

import json
import time

import pytest
from claude_harness import OPUS, SONNET, Run, World, hook_contexts, request_for

pytestmark = pytest.mark.e2e

DECISION = (
    "We decided to use PostgreSQL instead of MongoDB for the orders service "
    "because refunds need transactions."
)
WHERE = "The refund handlers live in services/billing/refunds.py."


def typed(world: World, kind: str) -> list[dict]:
    return [m for m in world.memories() if m["kind"] == kind]


def texts_of(world: World, kind: str) -> list[str]:
    return [m["text"] for m in typed(world, kind)]


def decision_problems(world: World) -> list[str]:
    """Session 1 states a decision and where the refund handlers live; a new session 2 asks
    for both. What fails to carry over, as "memory: ...", "brief: ...", "prompt: ..."; empty
    when the decision is learned, in session 2's session-start brief, and in its prompt context."""
    s1 = world.session(f"{DECISION} {WHERE}").check()
    # Another session in between, so the refund fact is not in the "last session" summary.
    s1b = world.session("We decided to use Tailwind for the storefront styling.").check()
    world.settle(s1.session_id, s1b.session_id)
    problems = []
    if not any("PostgreSQL" in t for t in texts_of(world, "decision")):
        problems.append(f"memory: no PostgreSQL decision in {world.memories()}")

    before = len(world.api.requests())
    prompt = "Add a refund endpoint: where do the refund handlers live, and which database?"
    s2 = world.session(prompt).check()
    assert s2.session_id not in (s1.session_id, s1b.session_id)
    body = request_for(world.api.model_requests(before), prompt)
    contexts = hook_contexts(body)
    brief = [block for label, block, _ in contexts if label.startswith("SessionStart:startup")]
    if not (brief and "PostgreSQL instead of MongoDB" in brief[0]):
        problems.append(f"brief: the decision is not in the session-start brief: {contexts}")
    on_prompt = [block for label, block, _ in contexts if label.startswith("UserPromptSubmit")]
    if not (on_prompt and "services/billing/refunds.py" in on_prompt[0]):
        problems.append(f"prompt: the refund handlers are not in the prompt context: {contexts}")
    return problems


def test_decision_reaches_the_next_session(world: World) -> None:
    assert decision_problems(world) == []


BROKEN_PARSER = """\
import sys

import memd.ingest.transcript as transcript

_parse = transcript._conversation_line


def _drop_user_turns(obj, kind, data, session_hint):
    return None if kind == "user" else _parse(obj, kind, data, session_hint)


transcript._conversation_line = _drop_user_turns
print("memd-e2e: transcript parser broken, user turns dropped", file=sys.stderr, flush=True)
"""
"""A sitecustomize for the daemon process only (on its PYTHONPATH): the transcript parser drops
every user line as noise, as it would if a CLI version moved the user's text elsewhere."""


def test_a_broken_parser_would_be_caught(world: World) -> None:
    """The check above can fail: a daemon whose transcript parser loses the user's turns, with
    the real CLI and its real hooks, leaves session 2 without the decision, and that is seen."""
    world.stop_daemon()
    patch = world.root / "broken-parser"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(BROKEN_PARSER)
    world.start_daemon(PYTHONPATH=str(patch))
    assert "transcript parser broken" in (world.root / "daemon.log").read_text()
    problems = decision_problems(world)
    assert [p.split(":")[0] for p in problems] == ["memory", "brief", "prompt"], problems


@pytest.mark.parametrize("model", [OPUS, SONNET], ids=["opus", "sonnet"])
def test_own_context_is_never_relearned(world: World, model: str) -> None:
    s1 = world.session(f"{DECISION} {WHERE}", model=model).check()
    world.settle(s1.session_id)
    learned = {m["id"] for m in world.memories()}

    before = len(world.api.requests())
    prompt = "Where do the refund handlers live? Keep the answer short."
    world.api.script([{"when": prompt, "reply": {"text": "Noted, thanks."}}])
    s2 = world.session(prompt, model=model).check()
    body = request_for(world.api.model_requests(before), prompt)
    contexts = hook_contexts(body)
    assert contexts, "memd's context did not reach the model"
    # Opus models carry hook context as a system entry in messages[]; Sonnet 4.5 as a
    # <system-reminder> inside the user turn.
    carriers = {role for _, _, role in contexts}
    assert carriers == ({"system"} if model == OPUS else {"user"}), carriers
    transcript = world.transcript(s2.session_id).read_text()
    assert "<memd-context>" in transcript  # it is in the transcript, for the parser to skip

    world.settle(s2.session_id)
    new = [m for m in world.memories() if m["id"] not in learned]
    for m in new:
        assert "PostgreSQL" not in m["text"] and "refunds.py" not in m["text"], m
        assert "memd-context" not in m["text"] and "memories from earlier" not in m["text"], m
    # The prompt itself is still learned (as an excerpt or summary of session 2).
    assert any(
        s["session_id"] == s2.session_id for m in world.memories() for s in m.get("sources", [])
    )


def test_resume_and_continue(world: World) -> None:
    s1 = world.session(DECISION).check()
    bug = "The bug was caused by a missing await in charge_card; fixed by awaiting it."
    s2 = world.session(bug, resume=s1.session_id).check()
    todo = "TODO: still need to add retries to the refund webhook."
    s3 = world.session(todo, cont=True).check()
    assert s1.session_id == s2.session_id == s3.session_id
    transcripts = list((world.home / ".claude" / "projects").glob("*/*.jsonl"))
    assert len(transcripts) == 1, transcripts
    # A resumed turn still gets the prompt-time context.
    world.settle(s1.session_id)
    assert sum("PostgreSQL" in t for t in texts_of(world, "decision")) == 1
    assert sum("missing await" in t for t in texts_of(world, "bugfix")) == 1
    assert sum("retries" in t for t in texts_of(world, "todo")) == 1
    # Read again (resume rewrites lines): nothing new.
    count = len(world.memories())
    world.settle(s1.session_id)
    assert len(world.memories()) == count


def test_compaction_and_the_session_after(world: World) -> None:
    summary = "SUMMARY-OF-EARLIER-WORK: the team discussed the orders service."
    world.api.script([{"when": "detailed summary", "reply": {"text": summary}}])
    s = world.session(DECISION).check()
    for i in range(4):
        world.session(f"Step {i}: keep going with the orders service.", resume=s.session_id)
    before = len(world.api.requests())
    world.session("/compact", resume=s.session_id).check()
    lines = [json.loads(x) for x in world.transcript(s.session_id).read_text().splitlines()]
    assert any(x.get("subtype") == "compact_boundary" for x in lines), "no compaction happened"
    after = "We decided to switch the queue from Redis to RabbitMQ after the compaction."
    world.session(after, resume=s.session_id).check()
    bodies = world.api.model_requests(before)
    assert any(summary in json.dumps(b["messages"]) for b in bodies)
    world.settle(s.session_id)
    decisions = texts_of(world, "decision")
    assert sum("PostgreSQL" in t for t in decisions) == 1, decisions
    assert sum("RabbitMQ" in t for t in decisions) == 1, decisions
    assert not [m for m in world.memories() if "SUMMARY-OF-EARLIER-WORK" in m["text"]]

    before = len(world.api.requests())
    prompt = "What queue do we use?"
    world.session(prompt).check()
    contexts = hook_contexts(request_for(world.api.model_requests(before), prompt))
    assert any("RabbitMQ" in block for _, block, _ in contexts), contexts


CART = "def total(prices):\n    return sum(prices[i] for i in range(len(prices) - 1))\n"
CART_FIXED = "def total(prices):\n    return sum(prices)\n"


def test_tool_calls_and_a_remembered_bug_fix(world: World) -> None:
    (world.project / "cart.py").write_text(CART)
    prompt = "The cart total is wrong for [1, 2, 3]: please fix cart.py."
    check = "python3 -c 'import cart; print(cart.total([1, 2, 3]))'"
    fix_text = (
        "The bug was caused by an off-by-one in total(): range(len(prices) - 1) skipped the "
        "last price. Fixed by summing all prices."
    )
    path = str(world.project / "cart.py")
    world.api.script(
        [
            {"when": "toolu_e2e_run2", "reply": {"text": fix_text}},
            {
                "when": "toolu_e2e_edit",
                "reply": {
                    "tool_use": {
                        "id": "toolu_e2e_run2",
                        "name": "Bash",
                        "input": {"command": check, "description": "run the check"},
                    }
                },
            },
            {
                "when": "toolu_e2e_read",
                "reply": {
                    "tool_use": {
                        "id": "toolu_e2e_edit",
                        "name": "Edit",
                        "input": {
                            "file_path": path,
                            "old_string": "sum(prices[i] for i in range(len(prices) - 1))",
                            "new_string": "sum(prices)",
                        },
                    }
                },
            },
            {
                "when": "toolu_e2e_run1",
                "reply": {
                    "tool_use": {
                        "id": "toolu_e2e_read",
                        "name": "Read",
                        "input": {"file_path": path},
                    }
                },
            },
            {
                "when": prompt,
                "reply": {
                    "text": "Let me run it first.",
                    "tool_use": {
                        "id": "toolu_e2e_run1",
                        "name": "Bash",
                        "input": {"command": check, "description": "run the check"},
                    },
                },
            },
        ]
    )
    s = world.session(prompt, tools=("Bash", "Read", "Edit")).check()
    assert (world.project / "cart.py").read_text() == CART_FIXED
    results = [
        block
        for body in world.api.model_requests()
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]
    outputs = {r["tool_use_id"]: json.dumps(r.get("content")) for r in results}
    assert "3" in outputs["toolu_e2e_run1"] and "6" in outputs["toolu_e2e_run2"], outputs
    world.settle(s.session_id)
    fixes = texts_of(world, "bugfix")
    assert any("off-by-one" in t and "summing all prices" in t for t in fixes), fixes


def test_secrets_reach_neither_memd_files_nor_later_sessions(world: World) -> None:
    typed_secret = "sk-ant-api03-" + "Zq8wX2vN7mR4tY6uP1sK9dL3fH5jG0cB" + "AA"
    printed_secret = "AKIAZ7Q4M2K8P3X9W5TR"
    prompt = f"We decided to deploy with the key {typed_secret} from the vault."
    world.api.script(
        [
            {"when": "toolu_e2e_env", "reply": {"text": "The deploy user is set up."}},
            {
                "when": prompt,
                "reply": {
                    "tool_use": {
                        "id": "toolu_e2e_env",
                        "name": "Bash",
                        "input": {
                            "command": f"echo AWS_ACCESS_KEY_ID={printed_secret}",
                            "description": "show the key",
                        },
                    }
                },
            },
        ]
    )
    s1 = world.session(prompt, tools=("Bash",)).check()
    world.settle(s1.session_id)
    assert [m for m in world.memories() if "deploy" in m["text"]], "session 1 was not learned"
    assert world.memd_files_contain(typed_secret) == []
    assert world.memd_files_contain(printed_secret) == []

    before = len(world.api.requests())
    world.session("How do we deploy? Which key do we use?").check()
    later = json.dumps(world.api.model_requests(before))
    assert "deploy" in later
    assert typed_secret not in later and printed_secret not in later


def hook_problems(world: World, run: Run) -> list[str]:
    """Anything the CLI reports about hooks beyond success: error attachments in the transcript,
    hook responses with a non-zero exit or output, hook messages on stderr."""
    problems = []
    for line in world.transcript(run.session_id).read_text().splitlines():
        obj = json.loads(line)
        kind = (obj.get("attachment") or {}).get("type", "") if obj["type"] == "attachment" else ""
        if "error" in kind or "blocking" in kind or "cancelled" in kind:
            problems.append(line)
    for e in run.events:
        if e.get("subtype") == "hook_response" and (
            e.get("exit_code", 0) != 0 or (e.get("stderr") or "").strip()
        ):
            problems.append(json.dumps(e))
    if "hook" in run.stderr.lower():
        problems.append(run.stderr)
    return problems


def hook_successes(world: World, session_id: str) -> set[str]:
    events = set()
    for line in world.transcript(session_id).read_text().splitlines():
        att = json.loads(line).get("attachment") or {}
        if att.get("type") == "hook_success":
            events.add(att.get("hookEvent", ""))
    return events


def test_daemon_stopped_sessions_run_normally(world: World) -> None:
    world.stop_daemon()
    start = time.monotonic()
    run = world.session("Hello, is anything remembered?", stream=True).check()
    assert time.monotonic() - start < 60
    assert hook_problems(world, run) == []
    # memd's hooks did run, and said nothing.
    started = [e for e in run.events if e.get("subtype") == "hook_response"]
    assert [e.get("hook_event") for e in started] == ["SessionStart"], started
    assert started[0].get("exit_code", 0) == 0 and not (started[0].get("output") or "").strip()
    assert not hook_successes(world, run.session_id)
    body = world.api.model_requests()[-1]
    assert "memd-context" not in json.dumps(body)


def test_a_failing_hook_would_be_caught(world: World) -> None:
    """The check above can fail: a hook that errors is reported by the CLI, and seen."""
    settings = world.home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    broken = {"type": "command", "command": "echo broken >&2; exit 1", "timeout": 5}
    data["hooks"]["UserPromptSubmit"].append({"hooks": [broken]})
    settings.write_text(json.dumps(data))
    run = world.session("Hello again.", stream=True).check()
    assert hook_problems(world, run), "a failing hook went unnoticed"
