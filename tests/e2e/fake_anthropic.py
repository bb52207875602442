"""A fake Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI offline.

Run as a process (``python fake_anthropic.py --log LOG --script SCRIPT --port-file PORT``) so it
can live inside the private network namespace the CLI runs in. Standard library only.

- Every request is appended to LOG as one JSON line: ``{"method", "path", "body"}``, so a test
  sees exactly what reached the model.
- SCRIPT is a JSON list of rules, read again on every request (a test rewrites it between
  sessions). A rule is ``{"when": TEXT, "reply": REPLY}``: the first rule whose ``when`` occurs in
  the JSON of the request's last ``user`` message answers. REPLY is ``{"text": "..."}`` or
  ``{"text": "...", "tool_use": {"id": ..., "name": ..., "input": {...}}}``. No match: a short
  text reply.
- ``POST /v1/messages`` answers with server-sent events when ``"stream": true``, else with one
  JSON message. ``count_tokens``, ``/v1/models`` and ``HEAD /`` get plausible answers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_TEXT = "Done."


def last_user_json(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return json.dumps(message, ensure_ascii=False)
    return ""


def choose_reply(body: dict[str, Any], script_path: Path) -> dict[str, Any]:
    try:
        rules = json.loads(script_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rules = []
    last = last_user_json(body)
    for rule in rules:
        if rule.get("when", "") in last:
            return dict(rule.get("reply") or {})
    return {"text": DEFAULT_TEXT}


def content_blocks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    if reply.get("tool_use"):
        tool = reply["tool_use"]
        blocks.append(
            {
                "type": "tool_use",
                "id": tool.get("id") or f"toolu_{uuid.uuid4().hex[:20]}",
                "name": tool["name"],
                "input": tool.get("input") or {},
            }
        )
    if not blocks:
        blocks.append({"type": "text", "text": DEFAULT_TEXT})
    return blocks


def message_json(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "claude-fake",
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 100, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {**block, "input": {}},
                    },
                )
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def record(self, body: Any) -> None:
        line = json.dumps({"method": self.command, "path": self.path, "body": body})
        with self.server.lock, open(self.server.log_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:20]}")
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.record(None)
        if self.path.startswith("/v1/models"):
            model = {"type": "model", "id": "claude-fake", "display_name": "Fake"}
            self.send_json(200, {"data": [model], "has_more": False})
            return
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self.record(body)
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self.send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if not path.endswith("/v1/messages"):
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        message = message_json(body, content_blocks(choose_reply(body, self.server.script_path)))
        if not body.get("stream"):
            self.send_json(200, message)
            return
        data = "".join(
            f"event: {name}\ndata: {json.dumps(payload)}\n\n"
            for name, payload in sse_events(message)
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log_path: Path, script_path: Path) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log_path = log_path
        self.script_path = script_path
        self.lock = threading.Lock()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--script", required=True)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    server = FakeServer(Path(args.log), Path(args.script))
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
