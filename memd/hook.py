"""`memd-hook EVENT`: Claude Code's hook client. Standard library only, and as little of it as can be.

It reads the hook JSON from stdin, forwards it unparsed to the daemon as
``{"cmd":"hook","event":EVENT,"payload":<stdin>}``, and prints the ``context`` of the reply for
``session-start`` and ``user-prompt-submit``. ``stop`` and ``session-end`` only notify.

Rules, because a hook must never block or break Claude Code:

- It always exits 0 and prints nothing on any failure (daemon down, slow, bad input).
- It never waits longer than ``MEMD_HOOK_TIMEOUT`` seconds (default 2) for the daemon, and
  ``session-end`` waits at most 0.3 s (Claude Code gives all SessionEnd hooks 1.5 s).
- ``MEMD_DISABLE=1`` makes it do nothing at all.
- Output is capped at Claude Code's 10,000 characters.

Speed: the interpreter starts in ~7 ms; ``import socket, json`` alone would cost ~20 ms more. So
this module imports only modules that are built in or already loaded (``sys``, ``posix``,
``_socket``, ``select``). It does not parse the payload, and it reads the daemon's hook reply,
``{"ok":true,"context":"..."}`` with ASCII escapes, without ``json``. UserPromptSubmit context is
printed in Claude Code's JSON form (see :func:`rendered`). For the fastest start, run
it as ``python -I -S /path/to/memd/hook.py EVENT`` (see :func:`command`).
"""

import posix
import sys

EVENTS = {
    "session-start": True,
    "user-prompt-submit": True,
    "stop": False,
    "session-end": False,
}
"""Each event, and whether Claude Code takes its stdout as context."""

DEFAULT_TIMEOUT = 2.0
NOTIFY_TIMEOUT = 0.3
MAX_STDIN = (1 << 20) - 256
"""The daemon refuses lines over 1 MiB; the envelope takes a few bytes."""
MAX_OUTPUT = 10_000
MAX_REPLY = 1 << 20
REPLY_PREFIX = b'{"ok":true,"context":"'
REPLY_SUFFIX = b'"}\n'


def env(name: str) -> str:
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "replace") if value else ""


def socket_path() -> str:
    """MEMD_SOCKET, else $MEMD_HOME/memd.sock: the rule ``Settings.socket_path`` follows."""
    path = env("MEMD_SOCKET")
    if path:
        return expand(path)
    home = env("MEMD_HOME")
    if home:
        return expand(home) + "/memd.sock"
    if posix.uname().sysname == "Darwin":
        return expand("~/Library/Application Support/memd/memd.sock")
    data = env("XDG_DATA_HOME") or expand("~/.local/share")
    return data + "/memd/memd.sock"


def expand(path: str) -> str:
    if path.startswith("~"):
        return env("HOME") + path[1:]
    return path


def timeout_seconds() -> float:
    raw = env("MEMD_HOOK_TIMEOUT") or env("MEMD_HOOK_TIMEOUT_SECONDS")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if 0 < value < 600 else DEFAULT_TIMEOUT


def read_stdin(timeout: float) -> bytes:
    """The hook JSON, or b"" when stdin is a terminal, too big, or not closed in time."""
    import select

    if posix.isatty(0):
        return b""
    chunks = []
    size = 0
    while True:
        ready, _, _ = select.select([0], [], [], timeout)
        if not ready:
            return b""
        chunk = posix.read(0, 65536)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_STDIN:
            return b""
        chunks.append(chunk)
    return b"".join(chunks)


def request_line(event: str, stdin: bytes) -> bytes:
    """The request, with the payload forwarded as it came (the daemon validates it).

    Valid JSON holds no raw newline inside strings, so newlines between tokens become spaces.
    """
    body = stdin.replace(b"\r", b" ").replace(b"\n", b" ").strip()
    return b'{"cmd":"hook","event":"' + event.encode() + b'","payload":' + body + b"}\n"


def ask(path: str, line: bytes, timeout: float, want_reply: bool) -> bytes:
    """Send one line; return the reply line (b"" on any failure or timeout)."""
    import _socket
    import time

    deadline = time.monotonic() + timeout
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return b""
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk or not want_reply:
                break
            buf += chunk
            if len(buf) > MAX_REPLY:
                return b""
        return buf
    except OSError:
        return b""
    finally:
        sock.close()


def context_of(reply: bytes) -> str:
    """The ``context`` of a successful reply, or "" (errors and oddities print nothing)."""
    if reply.startswith(REPLY_PREFIX) and reply.endswith(REPLY_SUFFIX):
        escaped = reply[len(REPLY_PREFIX) : -len(REPLY_SUFFIX)]
        if b'"' not in escaped.replace(b'\\"', b""):
            text = escaped.decode("unicode_escape")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # \ud83d\ude00 pairs arrive as two surrogates
                text = text.encode("utf-16", "surrogatepass").decode("utf-16")
            return text
    if b'"context"' not in reply:
        return ""
    import json  # an unexpected but valid shape: parse it properly

    obj = json.loads(reply)
    if not isinstance(obj, dict) or obj.get("ok") is not True:
        return ""
    context = obj.get("context")
    return context if isinstance(context, str) else ""


def run(argv: list[str]) -> None:
    if env("MEMD_DISABLE").lower() in ("1", "true", "yes"):
        return
    if len(argv) != 2 or argv[1] not in EVENTS:
        return
    event = argv[1]
    prints = EVENTS[event]
    timeout = timeout_seconds()
    if not prints:
        timeout = min(timeout, NOTIFY_TIMEOUT)
    stdin = read_stdin(timeout)
    if not stdin.strip():
        return
    reply = ask(socket_path(), request_line(event, stdin), timeout, want_reply=prints)
    if not prints or not reply:
        return
    text = context_of(reply)[:MAX_OUTPUT]
    if text:
        out = sys.stdout.buffer
        out.write(rendered(event, text))
        out.flush()


def rendered(event: str, text: str) -> bytes:
    """What Claude Code reads on stdout for ``text``.

    SessionStart's plain stdout reaches the model. UserPromptSubmit's does not (the real CLI,
    2.1.197 and 2.1.332, keeps it as a ``hook_success`` note it never sends), so that event gets
    the JSON form, whose ``additionalContext`` is sent with the prompt.
    """
    if event != "user-prompt-submit":
        return text.encode("utf-8", "replace")
    return (
        b'{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"'
        + json_string(text).encode("utf-8", "replace")
        + b'"}}'
    )


def json_string(text: str) -> str:
    """``text`` escaped as the inside of a JSON string (without importing json)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if min(text, default=" ") < " ":
        text = "".join(c if c >= " " else f"\\u{ord(c):04x}" for c in text)
    return text


def main() -> int:
    """Run the hook. Always 0: a hook must never break Claude Code."""
    try:  # noqa: SIM105 - contextlib would cost an import on every hook
        run(sys.argv)
    except BaseException:  # including KeyboardInterrupt and broken pipes
        pass
    return 0


def cli() -> None:
    """The console script: :func:`main`, then an immediate exit with status 0.

    Everything is written by then, so the interpreter's teardown (module cleanup, a final
    garbage collection) would only add its ~2 ms to every prompt.
    """
    main()
    try:  # noqa: SIM105
        sys.stdout.flush()
    except BaseException:
        pass
    posix._exit(0)


def command(event: str) -> str:
    """The fastest command line for a hook: this file run by this interpreter with ``-I -S``."""
    import shlex

    return shlex.join([sys.executable, "-I", "-S", __file__, event])


if __name__ == "__main__":
    cli()
