"""The socket protocol: one JSON object per line in each direction.

A request is ``{"cmd": NAME, ...args}``. A reply is ``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``. Standard library only: the hook imports this.
"""

from __future__ import annotations

import json
import socket
from typing import Any

MAX_LINE = 1 << 20
"""Requests over 1 MiB are refused."""


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("a message must be a JSON object")
    return obj


def error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


class NoReply(OSError):
    """Connected to the daemon, but its reply did not come (timeout or a dropped connection)."""


def request(path: str, payload: dict[str, Any], timeout: float | None = 30.0) -> dict[str, Any]:
    """Send one request and wait for its reply (``timeout=None``: as long as it takes).

    Raises OSError when nobody listens, ``NoReply`` when the daemon took the request but did
    not answer, and ValueError when the reply is not a JSON object.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5.0 if timeout is None else timeout)
    try:
        sock.connect(path)
        sock.settimeout(timeout)
        try:
            return _exchange(sock, payload)
        except OSError as exc:
            raise NoReply(f"the daemon took the request but did not answer: {exc}") from exc
    finally:
        sock.close()


def _exchange(sock: socket.socket, payload: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(encode(payload))
    buf = bytearray()
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > 64 * MAX_LINE:
            raise ValueError("reply too large")
    if not buf:
        raise ConnectionError("daemon closed the connection without a reply")
    return decode(bytes(buf))
