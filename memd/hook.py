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

Where the daemon listens: ``memd install`` writes the daemon's resolved socket (and a non-default
timeout) into the hook command, ``hook.py EVENT --socket PATH [--timeout SECONDS]``, so the hook
dials what the daemon binds however that was configured, without reading any file. Run by hand
without ``--socket``, it follows the rule of ``Settings``: ``MEMD_SOCKET``, else ``socket`` in the
config file, else ``$MEMD_HOME`` (or ``home`` in the config file, or the platform default) plus
``/memd.sock`` (:func:`locate`, which the CLI uses too).

Speed: the interpreter starts in ~7 ms; ``import socket, json`` alone would cost ~20 ms more. So
this module imports only modules that are built in or already loaded (``sys``, ``posix``,
``_socket``, ``_signal``). It does not parse the payload, and it reads the daemon's hook reply,
``{"ok":true,"context":"..."}`` with ASCII escapes, without ``json``. UserPromptSubmit context is
printed in Claude Code's JSON form (see :func:`rendered`). For the fastest start, run
it as ``python -I -S /path/to/memd/hookrun.py EVENT``, which loads this module from its cached
bytecode (see :func:`command` and :mod:`memd.hookrun`).
"""

import posix
import sys

TYPE_CHECKING = False  # typing itself would cost an import on every hook; mypy knows the name
if TYPE_CHECKING:
    from collections.abc import Callable

    Getenv = Callable[[str], str | None]

EVENTS = {
    "session-start": True,
    "user-prompt-submit": True,
    "stop": False,
    "session-end": False,
}
"""Each event, and whether Claude Code takes its stdout as context."""

DEFAULT_TIMEOUT = 2.0
NOTIFY_TIMEOUT = 0.3
RUNNER = "hookrun.py"
"""The file the installed command runs (:mod:`memd.hookrun`), next to this one."""
MAX_STDIN = (1 << 20) - 256
"""The daemon refuses lines over 1 MiB; the envelope takes a few bytes."""
MAX_OUTPUT = 10_000
MAX_REPLY = 1 << 20
REPLY_PREFIX = b'{"ok":true,"context":"'
REPLY_SUFFIX = b'"}\n'


def env(name: str) -> str:
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "replace") if value else ""


def locate(getenv: "Getenv" = env, home: str = "", config: str = "") -> tuple[str, float]:
    """The daemon's socket path and the hook timeout, by the precedence ``Settings`` follows:
    flag (``home``, ``config``: the CLI's ``--home`` and ``--config``) > ``MEMD_*`` environment
    > config file > default. The config file is read only when the environment leaves a gap.
    """
    file: dict[str, object] | None = None

    def from_file(key: str) -> object:
        nonlocal file
        if file is None:
            raw = config or getenv("MEMD_CONFIG") or ""
            if raw:
                path = expand(raw, getenv)
            else:
                base = getenv("XDG_CONFIG_HOME") or expand("~/.config", getenv)
                path = base + "/memd/memd.toml"
            file = read_config(path)
        return file.get(key)

    socket = getenv("MEMD_SOCKET") or from_file("socket")
    if isinstance(socket, str) and socket:
        socket = expand(socket, getenv)
    else:
        where = home or getenv("MEMD_HOME") or from_file("home")
        if isinstance(where, str) and where:
            base = expand(where, getenv)
        elif posix.uname().sysname == "Darwin":
            base = expand("~/Library/Application Support/memd", getenv)
        else:
            base = (getenv("XDG_DATA_HOME") or expand("~/.local/share", getenv)) + "/memd"
        socket = base.rstrip("/") + "/memd.sock" if base.rstrip("/") else "/memd.sock"
    raw_timeout = getenv("MEMD_HOOK_TIMEOUT") or getenv("MEMD_HOOK_TIMEOUT_SECONDS")
    timeout = parse_timeout(raw_timeout or from_file("hook_timeout_seconds"))
    return socket, timeout


def read_config(path: str) -> dict[str, object]:
    """The keys of the config file the hook needs; {} when it is missing or unreadable.

    ``tomllib`` costs tens of milliseconds to import, so it is imported only when the file
    mentions one of those keys.
    """
    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        return {}
    try:
        chunks = []
        while True:
            chunk = posix.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return {}
    finally:
        posix.close(fd)
    raw = b"".join(chunks)
    if b"socket" not in raw and b"home" not in raw and b"hook_timeout" not in raw:
        return {}
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except ValueError:  # TOMLDecodeError and UnicodeDecodeError: the daemon refuses it too
        return {}
    table = data.get("memd")
    return {**data, **table} if isinstance(table, dict) else data


def socket_path() -> str:
    """Where this process would find the daemon (the environment and the config file)."""
    return locate()[0]


def expand(path: str, getenv: "Getenv" = env) -> str:
    """``~`` and ``~user`` at the start, as ``Path.expanduser`` does."""
    if not path.startswith("~"):
        return path
    name, sep, rest = path[1:].partition("/")
    if name:
        import pwd

        try:
            home = pwd.getpwnam(name).pw_dir
        except KeyError:
            return path
    else:
        home = getenv("HOME") or ""
        if not home:
            import pwd

            home = pwd.getpwuid(posix.getuid()).pw_dir
    return home.rstrip("/") + sep + rest if home.rstrip("/") else "/" + rest


def parse_timeout(raw: object) -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str) and raw:
        try:
            value = float(raw)
        except ValueError:
            return DEFAULT_TIMEOUT
    else:
        return DEFAULT_TIMEOUT
    return value if 0 < value < 600 else DEFAULT_TIMEOUT


def parse_args(args: list[str]) -> tuple[str, str, str] | None:
    """``EVENT [--socket PATH] [--timeout SECONDS]`` as (event, socket, timeout); None if bad."""
    event = socket = timeout = ""
    i = 0
    while i < len(args):
        word = args[i]
        name, eq, value = word.partition("=")
        if name in ("--socket", "--timeout"):
            if not eq:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            if name == "--socket":
                socket = value
            else:
                timeout = value
        elif word.startswith("-") or event:
            return None
        else:
            event = word
        i += 1
    if event not in EVENTS:
        return None
    return event, socket, timeout


class StdinTimeout(Exception):
    pass


def read_stdin(timeout: float) -> bytes:
    """The hook JSON, or b"" when stdin is a terminal, too big, or not closed in time.

    The deadline is a real-time interval timer whose signal interrupts a blocking read
    (``_signal`` is loaded at every interpreter start; ``select`` would be one more shared
    library to load, ~0.3 ms of every prompt). Claude Code has written and closed stdin by the
    time the interpreter is up, so the timer almost never fires."""
    import _signal  # type: ignore[import-not-found]  # signal's built-in half; no stubs

    if posix.isatty(0):
        return b""

    def expired(signum: int, frame: object) -> None:
        raise StdinTimeout

    previous = _signal.signal(_signal.SIGALRM, expired)
    _signal.setitimer(_signal.ITIMER_REAL, timeout)
    chunks = []
    size = 0
    try:
        while True:
            chunk = posix.read(0, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_STDIN:
                return b""
            chunks.append(chunk)
    except StdinTimeout:
        return b""
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, previous)
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
    args = parse_args(argv[1:])
    if args is None:
        return
    event, path, raw_timeout = args
    prints = EVENTS[event]
    if path:  # the installed form: everything it needs is on its command line
        timeout = parse_timeout(raw_timeout or env("MEMD_HOOK_TIMEOUT"))
    else:
        path, timeout = locate()
        if raw_timeout:
            timeout = parse_timeout(raw_timeout)
    if not prints:
        timeout = min(timeout, NOTIFY_TIMEOUT)
    stdin = read_stdin(timeout)
    if not stdin.strip():
        return
    reply = ask(path, request_line(event, stdin), timeout, want_reply=prints)
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


def command_argv(event: str, socket: str = "", timeout: float | None = None) -> list[str]:
    """The fastest command line for a hook: ``hookrun.py`` run by this interpreter with ``-I -S``.

    ``-I`` keeps the environment and the user's site directory out; ``-S`` skips ``site`` and
    every ``.pth`` file; ``hookrun.py`` (next to this file) runs this module from its cached
    bytecode instead of compiling it on every prompt. In a strict editable install these files
    are links under ``build/``: the command names the file the link points to, which outlives a
    rebuild of ``build/``.
    """
    import os.path

    here = os.path.dirname(os.path.realpath(__file__))
    argv = [sys.executable, "-I", "-S", os.path.join(here, RUNNER), event]
    if socket:
        argv += ["--socket", socket]
    if timeout is not None and timeout != DEFAULT_TIMEOUT:
        argv += ["--timeout", repr(float(timeout))]
    return argv


def command(event: str, socket: str = "", timeout: float | None = None) -> str:
    """:func:`command_argv` as one shell-quoted line (what goes into settings.json)."""
    import shlex

    return shlex.join(command_argv(event, socket, timeout))


if __name__ == "__main__":
    cli()
