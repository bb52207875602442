"""The anthropic extractor against a real HTTP server on 127.0.0.1 that speaks the Messages API."""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memd.errors import BudgetExceeded, ExtractionError
from memd.extract import get_extractor
from memd.extract.anthropic import AnthropicExtractor
from memd.extract.base import LEDGER_KEY, MemoryState
from memd.extract.prompt import MEMD_EXTRACTION_PROMPT_MARKER
from memd.extract.reply import CANDIDATE_SCHEMA, TOOL_NAME, parse_candidates
from memd.models import KINDS, Segment, ToolCall, Turn
from memd.settings import Settings

SECRET = "sk-ant-api03-" + "Qx7_" * 22 + "AA"

MEMORIES = {
    "memories": [
        {
            "kind": "decision",
            "text": "Use black for formatting instead of ruff",
            "topic": "formatting",
            "keywords": ["black", "ruff"],
            "importance": 0.8,
            "sources": ["t1"],
            "supersedes": "Use ruff for formatting",
        },
        {
            "kind": "bugfix",
            "text": "A missing await caused the flaky retry test",
            "sources": ["t3"],
        },
        {"kind": "summary", "text": "Formatting switch and a retry fix", "topic": "formatter"},
    ]
}


REAL = Path(__file__).parent / "real_sessions" / "transcripts"


def segment() -> Segment:
    turns = [
        Turn(
            uuid="11111111-1111-4111-8111-111111111111",
            session_id="s1",
            role="user",
            text=f"Switch formatting from ruff to black. My key is {SECRET} by the way.",
            timestamp="2026-11-29T10:00:00Z",
        ),
        Turn(
            uuid="22222222-2222-4222-8222-222222222222",
            session_id="s1",
            role="assistant",
            text="",
            tools=[ToolCall("Bash", "pytest -q")],
        ),
        Turn(
            uuid="33333333-3333-4333-8333-333333333333",
            session_id="s1",
            role="assistant",
            text="The flaky test was caused by a missing await; fixed by awaiting the sleep.",
        ),
    ]
    return Segment(session_id="s1", project="/work/demo", turns=turns)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str/bytes -> raw
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def message(content: list[dict[str, Any]], tokens_in: int = 120, tokens_out: int = 40) -> dict:
    return {
        "id": "msg_01TestTestTest",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
    }


def tool_reply(payload: Any = MEMORIES, **kw: int) -> Reply:
    block = {"type": "tool_use", "id": "toolu_01Test", "name": TOOL_NAME, "input": payload}
    return Reply(body=message([block], **kw))


def text_reply(text: str) -> Reply:
    return Reply(body=message([{"type": "text", "text": text}]))


def error_reply(status: int, etype: str, wait: tuple[str, str] = ("retry-after-ms", "10")) -> Reply:
    """An API error whose header asks the SDK to wait (10 ms by default) before retrying."""
    return Reply(
        status=status,
        body={"type": "error", "error": {"type": etype, "message": f"{etype} (test)"}},
        headers=dict([wait]),
    )


class MessagesServer:
    """A Messages API on 127.0.0.1: replies come from a script, requests are recorded."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "raw": raw}
                    )
                    reply = server.script.pop(0) if server.script else tool_reply()
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body
                data = (
                    json.dumps(body).encode()
                    if isinstance(body, dict | list)
                    else body.encode()
                    if isinstance(body, str)
                    else body or b""
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None  # type: ignore[method-assign]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r["raw"]) for r in self.requests]


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    srv = MessagesServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def settings_for(server: MessagesServer, **kw: Any) -> Settings:
    values: dict[str, Any] = {
        "extractor": "anthropic",
        "anthropic_base_url": server.url,
        "anthropic_api_key": "test-key-for-loopback",
        "llm_timeout_seconds": 0.5,
        "llm_max_retries": 2,
        "llm_daily_token_budget": 100_000,
    }
    values.update(kw)
    return Settings(**values)


def extractor_for(server: MessagesServer, state: Any = None, **kw: Any) -> AnthropicExtractor:
    return AnthropicExtractor(settings_for(server, **kw), state=state)


def test_get_extractor_returns_the_anthropic_backend(server: MessagesServer) -> None:
    ext = get_extractor(settings_for(server))
    assert isinstance(ext, AnthropicExtractor) and ext.name == "anthropic"


def test_structured_output_through_a_forced_tool(server: MessagesServer) -> None:
    ext = extractor_for(server)
    seg = segment()
    cands = ext.extract(seg)
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert "test-key-for-loopback" in (
        headers.get("x-api-key"),
        headers.get("authorization", "")[7:],
    )
    body = server.bodies()[0]
    assert body["model"] == "claude-haiku-4-5"
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert body["tools"][0]["input_schema"] == CANDIDATE_SCHEMA
    prompt = body["messages"][0]["content"]
    assert prompt.startswith(MEMD_EXTRACTION_PROMPT_MARKER)
    assert "[t1] user asks: Switch formatting from ruff to black." in prompt
    assert "[t2] claude work: ran `pytest -q`" in prompt  # the episode's work, a line per call
    # Defensive redaction: the unredacted key in the turn never reaches the wire.
    assert SECRET not in req["raw"].decode()
    assert "[REDACTED:anthropic_key]" in prompt

    typed = [c for c in cands if c.kind != "excerpt"]
    assert [c.kind for c in typed] == ["decision", "bugfix", "summary"]
    decision, bugfix, summary = typed
    assert decision.source_uuids == [seg.turns[0].uuid]
    assert decision.supersedes_hint == "Use ruff for formatting"
    assert decision.importance == 0.8 and decision.keywords == ["black", "ruff"]
    assert bugfix.source_uuids == [seg.turns[2].uuid] and bugfix.importance == 0.5
    assert summary.source_uuids == [t.uuid for t in seg.turns]  # no sources: whole segment
    excerpts = [c for c in cands if c.kind == "excerpt"]
    # the substantive turns 0 and 2 (turn 1 said nothing) share one excerpt window
    assert [c.source_uuids for c in excerpts] == [[seg.turns[0].uuid, seg.turns[2].uuid]]
    assert all(SECRET not in c.text for c in cands)
    assert all(c.kind in KINDS and c.source_uuids for c in cands)

    stats = ext.stats()
    assert stats["calls"] == 1 and stats["tokens_in"] == 120 and stats["tokens_out"] == 40
    assert stats["tokens_today"] == 160 and stats["failures"] == 0
    assert stats["budget_exhausted"] is False


@pytest.mark.parametrize(
    ("status", "etype"),
    [
        (408, "timeout_error"),
        (409, "conflict_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
    ],
)
def test_retries_then_succeeds(server: MessagesServer, status: int, etype: str) -> None:
    server.script = [error_reply(status, etype), tool_reply()]
    ext = extractor_for(server)
    cands = ext.extract(segment())
    assert len(server.requests) == 2
    assert any(c.kind == "decision" for c in cands)
    assert ext.stats()["calls"] == 2 and ext.stats()["failures"] == 0


def test_retry_after_is_honoured_up_to_a_cap(server: MessagesServer) -> None:
    server.script = [error_reply(429, "rate_limit_error", ("retry-after-ms", "400")), tool_reply()]
    ext = extractor_for(server)
    start = time.monotonic()
    ext.extract(segment())
    assert time.monotonic() - start >= 0.4  # the SDK waited as the server asked
    assert len(server.requests) == 2

    # A server that asks for a longer wait than a background extractor gives is not retried.
    server.script = [error_reply(429, "rate_limit_error", ("retry-after", "3600"))]
    start = time.monotonic()
    with pytest.raises(ExtractionError, match="asked to wait 3600 s"):
        ext.extract(segment())
    assert time.monotonic() - start < 5
    assert len(server.requests) == 3
    assert ext.stats()["calls"] == 3 and ext.stats()["failures"] == 1


def test_slow_reply_times_out_and_is_retried(server: MessagesServer) -> None:
    server.script = [Reply(body=message([]), delay=3.0), tool_reply()]
    ext = extractor_for(server)
    start = time.monotonic()
    cands = ext.extract(segment())
    assert time.monotonic() - start < 2.5
    assert len(server.requests) == 2
    assert any(c.kind == "bugfix" for c in cands)


def test_gives_up_after_max_retries(server: MessagesServer) -> None:
    server.script = [error_reply(503, "api_error") for _ in range(5)]
    ext = extractor_for(server, llm_max_retries=2)
    with pytest.raises(ExtractionError, match="after 3 attempts"):
        ext.extract(segment())
    assert len(server.requests) == 3
    assert ext.stats()["failures"] == 1


def test_timeouts_exhaust_retries(server: MessagesServer) -> None:
    server.script = [Reply(body=message([]), delay=2.0) for _ in range(3)]
    ext = extractor_for(server, llm_max_retries=1, llm_timeout_seconds=0.3)
    with pytest.raises(ExtractionError, match="timed out"):
        ext.extract(segment())
    assert len(server.requests) == 2


def test_client_errors_are_not_retried(server: MessagesServer) -> None:
    server.script = [error_reply(400, "invalid_request_error")]
    ext = extractor_for(server)
    with pytest.raises(ExtractionError, match="HTTP 400"):
        ext.extract(segment())
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        text_reply("Here you go:\n```json\n" + json.dumps(MEMORIES) + "\n```\nDone."),
        text_reply("Sure! " + json.dumps(MEMORIES["memories"]) + " hope that helps"),
        # cut off mid-list: the complete items are kept
        text_reply(json.dumps(MEMORIES)[:-60]),
        # partial keys and odd types: kind aliases, importance 1-10, sources as a string
        tool_reply(
            {
                "items": [
                    {"type": "Decisions", "content": "Use black for formatting", "source": "1"},
                    {
                        "kind": "bug",
                        "text": "A missing await caused it",
                        "importance": "7",
                        "turn_ids": "t3, t9",
                        "keywords": "await, retry",
                    },
                    {"kind": "fact", "text": "No provenance here", "sources": ["t42"]},
                ]
            }
        ),
        tool_reply({"memories": json.dumps(MEMORIES["memories"])}),  # JSON in a string
    ],
)
def test_malformed_replies_are_parsed_leniently(server: MessagesServer, reply: Reply) -> None:
    server.script = [reply]
    cands = extractor_for(server).extract(segment())
    typed = [c for c in cands if c.kind != "excerpt"]
    assert typed, "nothing parsed"
    assert typed[0].kind == "decision" and "black" in typed[0].text
    assert all(c.source_uuids for c in cands)
    assert not any("No provenance" in c.text for c in cands)
    bug = [c for c in typed if c.kind == "bugfix"]
    if bug and bug[0].keywords == ["await", "retry"]:
        assert bug[0].importance == 0.7
        assert bug[0].source_uuids == ["33333333-3333-4333-8333-333333333333"]


@pytest.mark.parametrize(
    "reply",
    [
        text_reply("I could not find anything useful in this transcript, sorry."),
        Reply(body="<html>502 Bad Gateway</html>"),
        Reply(body=message([])),
    ],
)
def test_unparseable_replies_raise_extraction_error(server: MessagesServer, reply: Reply) -> None:
    server.script = [reply]
    ext = extractor_for(server)
    with pytest.raises(ExtractionError):
        ext.extract(segment())
    assert ext.stats()["failures"] == 1


def test_daily_budget_stops_calls_and_persists(server: MessagesServer) -> None:
    state = MemoryState()
    server.script = [tool_reply(tokens_in=1900, tokens_out=200)]
    ext = extractor_for(server, state=state, llm_daily_token_budget=2000)
    ext.extract(segment())
    assert state.get(LEDGER_KEY)["tokens"] == 2100
    with pytest.raises(BudgetExceeded):
        ext.extract(segment())
    assert len(server.requests) == 1  # refused before calling
    stats = ext.stats()
    assert stats["budget_exhausted"] is True and stats["fallbacks"] == 1
    assert stats["tokens_today"] == 2100 and stats["daily_budget"] == 2000

    # A new extractor with the same state (a daemon restart) still refuses ...
    again = extractor_for(server, state=state, llm_daily_token_budget=2000)
    with pytest.raises(BudgetExceeded):
        again.extract(segment())
    # ... until the UTC day changes.
    state.set(LEDGER_KEY, {"day": "2000-01-01", "tokens": 10**9, "by_backend": {}})
    assert any(c.kind == "decision" for c in again.extract(segment()))
    assert len(server.requests) == 2


def test_missing_api_key_is_an_extraction_error(server: MessagesServer) -> None:
    ext = extractor_for(server, anthropic_api_key=None)
    with pytest.raises(ExtractionError, match="no API key"):
        ext.extract(segment())
    assert server.requests == []


def test_parse_candidates_rejects_garbage() -> None:
    with pytest.raises(ExtractionError):
        parse_candidates("", {"t1": "u1"})
    with pytest.raises(ExtractionError):
        parse_candidates({"weird": 3}, {"t1": "u1"})
    assert parse_candidates({"memories": []}, {"t1": "u1"}) == []


def test_prompt_stays_bounded_for_huge_segments() -> None:
    """A long segment is read in batches of episodes, each prompt within the budget, every
    turn that said something cited in one of them."""
    from memd.extract.prompt import PROMPT_CHARS, build_prompts

    turns = [
        Turn(
            uuid=f"u{i}", session_id="s", role="user" if i % 2 else "assistant", text="word " * 900
        )
        for i in range(400)
    ]
    prompts, ids = build_prompts(Segment(session_id="s", project="/p", turns=turns))
    assert len(prompts) > 1
    for prompt in prompts:
        assert prompt.startswith(MEMD_EXTRACTION_PROMPT_MARKER)
        assert len(prompt) < PROMPT_CHARS + 7000  # instructions and schema on top of the budget
    cited = {tid for p in prompts for tid in re.findall(r"^\[(t\d+)\]", p, re.M)}
    assert cited == set(ids) and len(ids) == 400
    assert {ids[t] for t in cited} == {f"u{i}" for i in range(400)}


def test_a_recorded_answer_on_a_real_session(server: MessagesServer) -> None:
    """The LLM reads a real session's episodes: a recorded answer to the prompt memd builds for
    the spotter OpenTelemetry session (its ids as the prompt numbered them) gives grounded,
    typed memories, and a memory citing a turn that does not say it is dropped."""
    from memd.extract.prompt import build_prompts
    from memd.ingest.transcript import parse_lines

    path = REAL / "marot-spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
    with gzip.open(path, "rb") as fh:
        turns = parse_lines(fh)
    seg = Segment(session_id="s", project="/home/USER/projects/spotter", turns=turns)
    prompts, ids = build_prompts(seg)
    text = "\n".join(prompts)
    body = "\n".join(p.split("<transcript>")[1] for p in prompts)
    assert "agent (not the user)" not in body  # the user asked, not a subagent
    assert "Let me " not in body  # the agent's narration never reaches the model
    tid = next(
        t
        for t in ids
        if re.search(rf"^\[{t}\] claude says while working: So `current_span_ctx", text, re.M)
    )
    commit = next(
        t
        for t in ids
        if re.search(rf"^\[{t}\] claude work: ran `git add -A && git commit", text, re.M)
    )
    recorded = {
        "memories": [
            {
                "kind": "bugfix",
                "text": "current_span_ctx() returns a span context directly, not {:ok, ctx}",
                "sources": [tid],
            },
            {"kind": "progress", "text": "Committed the OTEL dependencies", "sources": [commit]},
            {
                "kind": "fact",
                "text": "The deploy runs on Kubernetes in eu-west-1",
                "sources": [tid],
            },
        ]
    }
    server.script = [tool_reply(recorded) for _ in prompts]
    cands = extractor_for(server, llm_daily_token_budget=10**7).extract(seg)
    assert len(server.requests) == len(prompts)
    typed = [c.text for c in cands if c.kind != "excerpt"]
    assert any("current_span_ctx" in t for t in typed)
    assert not any("Kubernetes" in t for t in typed)  # ungrounded: dropped


def test_ledger_persists_in_memd_state(server: MessagesServer, tmp_path: Any) -> None:
    from memd.state import State

    state = State(tmp_path / "state.db")
    try:
        server.script = [tool_reply(tokens_in=900, tokens_out=100)]
        extractor_for(server, state=state, llm_daily_token_budget=1800).extract(segment())
    finally:
        state.close()
    reopened = State(tmp_path / "state.db")  # a daemon restart
    try:
        again = extractor_for(server, state=reopened, llm_daily_token_budget=1800)
        assert again.stats()["tokens_today"] == 1000
        with pytest.raises(BudgetExceeded):  # 1000 spent + a ~1000-token prompt > 1800
            again.extract(segment())
        assert len(server.requests) == 1
    finally:
        reopened.close()


def test_the_prompt_demands_grounded_memories_that_cite_their_turns() -> None:
    from memd.extract.prompt import build_prompt

    prompt, ids = build_prompt(segment())
    assert "states only what its source turns say" in prompt
    assert "never add a role, purpose" in prompt and "citing all those turns" in prompt
    assert ids["t1"] == segment().turns[0].uuid


def test_ungrounded_llm_memories_are_dropped(server: MessagesServer) -> None:
    server.script = [
        tool_reply(
            {
                "memories": [
                    {"kind": "decision", "text": "Use black for formatting", "sources": ["t1"]},
                    {  # a purpose no turn states
                        "kind": "fact",
                        "text": "Project uses Redis for caching session tokens in production",
                        "sources": ["t1"],
                    },
                    {  # grounded, but cites the wrong turn
                        "kind": "bugfix",
                        "text": "A missing await made the retry test flaky; awaiting the sleep",
                        "sources": ["t1"],
                    },
                    {
                        "kind": "bugfix",
                        "text": "A missing await made the retry test flaky; awaiting the sleep",
                        "sources": ["t3"],
                    },
                ]
            }
        )
    ]
    typed = [c for c in extractor_for(server).extract(segment()) if c.kind != "excerpt"]
    assert [(c.kind, c.source_uuids) for c in typed] == [
        ("decision", [segment().turns[0].uuid]),
        ("bugfix", [segment().turns[2].uuid]),
    ]
    said = {t.uuid: t.text for t in segment().turns}
    ids = {"t1": segment().turns[0].uuid}
    kept = parse_candidates(
        {"memories": [{"kind": "fact", "text": "格式化统一用 black", "sources": ["t1"]}]}, ids
    )
    assert kept  # without the turns' text nothing is checked
    assert not parse_candidates(
        {"memories": [{"kind": "fact", "text": "缓存统一用 Redis 集群", "sources": ["t1"]}]},
        ids,
        said=said,
    )


def test_one_pydantic_model_gives_the_schema_and_the_lenient_reader() -> None:
    from memd.extract.reply import LLM_KINDS, LlmMemory

    item = CANDIDATE_SCHEMA["properties"]["memories"]["items"]
    assert CANDIDATE_SCHEMA["required"] == ["memories"]
    assert item["required"] == ["kind", "text", "sources"]
    assert item["properties"]["kind"]["enum"] == list(LLM_KINDS)
    assert item["properties"]["importance"] == {"maximum": 1, "minimum": 0, "type": "number"}
    flat = json.dumps(CANDIDATE_SCHEMA)
    assert "$ref" not in flat and "title" not in flat and "default" not in flat  # short prompt

    read = LlmMemory.read(
        {"kind": "", "type": "Next Step", "text": None, "content": " Ship  it ", "sources": None}
        | {"source": "2", "importance": "70", "extra": {"ignored": True}}
    )
    assert read is not None
    assert (read.kind, read.text, read.sources, read.importance) == ("todo", "Ship it", ["t2"], 0.7)
    assert LlmMemory.read("a bare string") == LlmMemory(text="a bare string")
    assert LlmMemory.read({"kind": "fact", "sources": ["t1"]}) is None  # no text
    assert LlmMemory.read({"text": ""}) is None
    assert LlmMemory.read(42) is None
