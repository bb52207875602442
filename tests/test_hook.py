"""memd-hook: stdlib only, always exit 0, silent and quick on any failure.

The daemon here is a small real Unix socket server in a thread that records what it receives and
answers what each test tells it to: it checks the client's side of the protocol. The real daemon
answers the same hooks in test_daemon.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_process import MEMD_HOOK

from memd import hook
from memd.daemon.server import encode_reply

PAYLOAD = {
    "session_id": "s1",
    "transcript_path": "/tmp/x.jsonl",
    "cwd": "/tmp",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "which database do we use?",
}


class FakeDaemon:
    """Accepts connections, records request lines, replies with ``reply`` (None: never)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.reply: bytes | None = encode_reply({"ok": True, "context": ""}, hook=True)
        self.lines: list[bytes] = []
        self.connections = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.should_exit = False
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.should_exit:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.settimeout(5)
            buf = b""
            try:
                while not buf.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
            except OSError:
                pass
            self.lines.append(buf)
            if self.reply is None:
                self.held.append(conn)  # never answer, never close
                continue
            with contextlib.suppress(OSError):
                conn.sendall(self.reply)
            conn.close()

    def close(self) -> None:
        self.should_exit = True
        self.thread.join(2)
        self.sock.close()
        for c in self.held:
            c.close()


@pytest.fixture
def fake(short_socket: str) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(short_socket)
    yield daemon
    daemon.close()


def run_hook(
    event: str,
    stdin: str | None,
    socket_path: str,
    timeout: float = 30,
    **env: str,
) -> tuple[subprocess.CompletedProcess[str], float]:
    full_env = {**os.environ, "MEMD_SOCKET": socket_path, **env}
    started = time.monotonic()
    out = subprocess.run(
        [MEMD_HOOK, event],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
    return out, time.monotonic() - started


def loaded_modules(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; import sys; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(eval(out.stdout))  # a printed list of str


def test_importing_the_hook_pulls_in_nothing_heavy() -> None:
    modules = loaded_modules("import memd.hook")
    assert "memd.hook" in modules
    heavy = {
        "pydantic",
        "pydantic_settings",
        "click",
        "lancedb",
        "fastembed",
        "numpy",
        "pyarrow",
        "onnxruntime",
        "memd.settings",
        "memd.daemon.app",
        "memd.store.table",
        "memd.protocol",
        "json",
        "socket",
        "asyncio",
    }
    assert not heavy & modules, heavy & modules
    # Beyond what the interpreter itself loads, the hook adds only itself.
    assert modules - loaded_modules("pass") == {"memd", "memd.hook"}


def test_daemon_down_prints_nothing_quickly(tmp_path: Path) -> None:
    missing = str(tmp_path / "nobody.sock")
    out, took = run_hook("user-prompt-submit", json.dumps(PAYLOAD), missing)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert took < 1.0
    # A stale socket file (nobody listening) is the same.
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(tmp_path / "s.sock"))
    stale.close()
    out, took = run_hook("session-start", json.dumps(PAYLOAD), str(tmp_path / "s.sock"))
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert took < 1.0


def test_disabled_does_nothing_at_all(fake: FakeDaemon) -> None:
    fake.reply = encode_reply({"ok": True, "context": "should not appear"}, hook=True)
    proc = subprocess.Popen(
        [MEMD_HOOK, "user-prompt-submit"],
        stdin=subprocess.PIPE,  # left open: a disabled hook must not even read it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "MEMD_SOCKET": fake.path, "MEMD_DISABLE": "1"},
    )
    try:
        stdout, stderr = proc.communicate(timeout=5)
    finally:
        proc.kill()
    assert (proc.returncode, stdout, stderr) == (0, b"", b"")
    time.sleep(0.1)
    assert fake.connections == 0


def test_payload_is_forwarded_as_it_came(fake: FakeDaemon) -> None:
    pretty = json.dumps(PAYLOAD, indent=2, ensure_ascii=False)  # multi-line stdin
    out, _ = run_hook("user-prompt-submit", pretty, fake.path)
    assert out.returncode == 0
    (line,) = fake.lines
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "cmd": "hook",
        "event": "user-prompt-submit",
        "payload": PAYLOAD,
    }


def test_context_is_printed_exactly(fake: FakeDaemon) -> None:
    text = '<memd-context>\n# memd: x\nDecisions:\n- 使用 PostgreSQL 😀 "q" \\ end\n</memd-context>'
    fake.reply = encode_reply({"ok": True, "context": text}, hook=True)
    out, _ = run_hook("session-start", json.dumps(PAYLOAD), fake.path)
    assert (out.returncode, out.stdout) == (0, text)
    # UserPromptSubmit: Claude Code's JSON form (its plain stdout never reaches the model).
    out, _ = run_hook("user-prompt-submit", json.dumps(PAYLOAD), fake.path)
    assert out.returncode == 0
    assert json.loads(out.stdout) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}
    }


def test_prompt_context_with_control_characters_is_valid_json(fake: FakeDaemon) -> None:
    text = "tab\there\r\x01\x1f \u2028 end"
    fake.reply = encode_reply({"ok": True, "context": text}, hook=True)
    out, _ = run_hook("user-prompt-submit", json.dumps(PAYLOAD), fake.path)
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == text


def test_output_is_capped_at_10000_chars(fake: FakeDaemon) -> None:
    fake.reply = encode_reply({"ok": True, "context": "x" * 25_000}, hook=True)
    out, _ = run_hook("session-start", json.dumps(PAYLOAD), fake.path)
    assert out.stdout == "x" * 10_000
    out, _ = run_hook("user-prompt-submit", json.dumps(PAYLOAD), fake.path)
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == "x" * 10_000


def test_error_replies_and_odd_replies_print_nothing(fake: FakeDaemon) -> None:
    for reply in (
        encode_reply({"ok": False, "error": "boom"}),
        b"garbage\n",
        b'{"ok":true,"context":"unterminated\n',
        b"",
    ):
        fake.reply = reply
        out, _ = run_hook("user-prompt-submit", json.dumps(PAYLOAD), fake.path)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_a_valid_reply_in_another_shape_still_works(fake: FakeDaemon) -> None:
    fake.reply = b'{"ok": true, "extra": 1, "context": "plain"}\n'
    out, _ = run_hook("session-start", json.dumps(PAYLOAD), fake.path)
    assert out.stdout == "plain"


def test_malformed_stdin_prints_nothing(fake: FakeDaemon) -> None:
    fake.reply = encode_reply({"ok": False, "error": "malformed request"})
    for bad in ("{not json", "\x00\x01", "[]"):
        out, _ = run_hook("user-prompt-submit", bad, fake.path)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    count = len(fake.lines)
    out, _ = run_hook("user-prompt-submit", "", fake.path)  # empty: not even sent
    assert (out.returncode, out.stdout) == (0, "")
    assert len(fake.lines) == count


def test_stdin_never_closed_gives_up_at_the_timeout(fake: FakeDaemon) -> None:
    """A caller that writes the payload but never closes stdin: the hook stops reading at its
    timeout, prints nothing, never dials the daemon, and leaves no timer behind (it exits 0,
    not killed by the alarm)."""
    fake.reply = encode_reply({"ok": True, "context": "should not appear"}, hook=True)
    for cmd in ([MEMD_HOOK, "user-prompt-submit"], hook.command_argv("user-prompt-submit")):
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "MEMD_SOCKET": fake.path, "MEMD_HOOK_TIMEOUT": "0.5"},
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(PAYLOAD).encode())
        proc.stdin.flush()
        started = time.monotonic()
        try:
            returncode = proc.wait(timeout=10)
            took = time.monotonic() - started
            stdout, stderr = proc.communicate(timeout=5)
        finally:
            proc.kill()
            proc.stdin.close()
        assert (returncode, stdout, stderr) == (0, b"", b""), cmd
        assert 0.4 <= took < 2.0, took
    time.sleep(0.1)
    assert fake.connections == 0


def test_installed_form_loads_no_library_beyond_the_floor(tmp_path: Path) -> None:
    """The installed command loads no shared library that ``python -I -S -c "import _socket"``
    (the benchmark's floor) does not: each costs a fraction of a millisecond per prompt."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        f"sys.argv = ['hookrun.py', 'user-prompt-submit', '--socket', {str(tmp_path / 'x.sock')!r}]\n"
        "sys.path.append(" + repr(str(Path(hook.__file__).resolve().parent)) + ")\n"
        "import hook\n"
        "hook.main()\n"
        "print(sorted(m for m, v in sys.modules.items() if getattr(v, '__file__', '') and "
        "str(v.__file__).endswith('.so')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(probe)],
        input=json.dumps(PAYLOAD),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert set(eval(out.stdout.strip().splitlines()[-1])) <= {"_socket"}


def test_slow_daemon_hits_the_hard_timeout(fake: FakeDaemon) -> None:
    fake.reply = None  # accepts, reads, never answers
    out, took = run_hook(
        "user-prompt-submit", json.dumps(PAYLOAD), fake.path, MEMD_HOOK_TIMEOUT="0.5"
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert 0.5 <= took < 2.0


def test_session_end_only_notifies(fake: FakeDaemon) -> None:
    fake.reply = None  # even a daemon that never answers cannot hold it up
    payload = {**PAYLOAD, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    out, took = run_hook("session-end", json.dumps(payload), fake.path, MEMD_HOOK_TIMEOUT="5")
    assert (out.returncode, out.stdout) == (0, "")
    assert took < 1.5
    deadline = time.monotonic() + 2
    while not fake.lines and time.monotonic() < deadline:
        time.sleep(0.02)
    assert json.loads(fake.lines[0])["event"] == "session-end"


def test_stop_prints_nothing_even_with_context(fake: FakeDaemon) -> None:
    fake.reply = encode_reply({"ok": True, "context": "nope"}, hook=True)
    out, _ = run_hook("stop", json.dumps(PAYLOAD), fake.path)
    assert (out.returncode, out.stdout) == (0, "")
    assert json.loads(fake.lines[0])["event"] == "stop"


def test_unknown_event_or_no_event_does_nothing(fake: FakeDaemon) -> None:
    for args in (["pre-tool-use"], [], ["user-prompt-submit", "extra"]):
        out = subprocess.run(
            [MEMD_HOOK, *args],
            input=json.dumps(PAYLOAD),
            capture_output=True,
            text=True,
            env={**os.environ, "MEMD_SOCKET": fake.path},
            timeout=30,
        )
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert fake.connections == 0


def test_fast_form_runs_the_file_with_isolated_interpreter(fake: FakeDaemon) -> None:
    fake.reply = encode_reply({"ok": True, "context": "fast path"}, hook=True)
    cmd = hook.command("user-prompt-submit")
    assert " -I -S " in cmd
    out = subprocess.run(
        cmd,
        shell=True,
        input=json.dumps(PAYLOAD),
        capture_output=True,
        text=True,
        env={**os.environ, "MEMD_SOCKET": fake.path},
        timeout=30,
    )
    assert out.returncode == 0
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == "fast path"


def test_runner_loads_the_hook_from_bytecode_and_picks_up_an_upgrade(tmp_path: Path) -> None:
    """hookrun.py (the installed command) imports hook.py: compiled once, then read from
    __pycache__; a changed hook.py (an upgrade) is recompiled, never run stale."""
    real = Path(hook.__file__).resolve().parent
    pkg = tmp_path / "site packages" / "memd"
    pkg.mkdir(parents=True)
    (pkg / "hookrun.py").write_text((real / "hookrun.py").read_text())
    source = (real / "hook.py").read_text()

    def run(marker: str) -> str:
        cmd = [sys.executable, "-I", "-S", str(pkg / "hookrun.py"), "stop", "--socket"]
        out = subprocess.run(
            [*cmd, str(tmp_path / "absent.sock")],
            input="{}",
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (out.returncode, out.stderr) == (0, ""), out
        return out.stdout

    # A line at import time shows which version of the code ran (and that it ran at all).
    for version in (1, 2):
        (pkg / "hook.py").write_text(source + f'\nsys.stdout.write("hook v{version}\\n")\n')
        stamp = time.time() + version * 10  # a distinct mtime for each version
        os.utime(pkg / "hook.py", (stamp, stamp))
        assert run(str(version)) == f"hook v{version}\n"
        # The cache was written for this very source: its header holds the source's mtime.
        (cached,) = (pkg / "__pycache__").glob("hook.*.pyc")
        assert int.from_bytes(cached.read_bytes()[8:12], "little") == int(stamp)
    # Only the hook is imported from there: nothing else of memd's comes along.
    assert [p.name.split(".")[0] for p in (pkg / "__pycache__").iterdir()] == ["hook"]


def test_socket_path_follows_the_settings_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    from memd.settings import load_settings

    monkeypatch.delenv("MEMD_SOCKET", raising=False)
    assert hook.locate(os.environ.get)[0] == str(load_settings().socket_path)
    monkeypatch.setenv("MEMD_SOCKET", "~/x/m.sock")
    assert hook.locate(os.environ.get)[0] == os.path.expanduser("~/x/m.sock")


SOCKET_CASES: list[tuple[str, dict[str, str], str, dict[str, str]]] = [
    # (case, environment, config file text, CLI flags)
    ("defaults", {}, "", {}),
    ("MEMD_HOME", {"MEMD_HOME": "~/h1"}, "", {}),
    ("MEMD_SOCKET beats everything", {"MEMD_SOCKET": "/tmp/a.sock"}, 'socket = "/tmp/f.sock"', {}),
    ("file home", {}, 'home = "~/from file"', {}),
    ("file socket", {}, "socket = '/tmp/file.sock'\nhome = '/tmp/fh'", {}),
    ("[memd] table", {}, '[memd]\nhome = "/tmp/table home/"', {}),
    ("file socket beats MEMD_HOME", {"MEMD_HOME": "/tmp/eh"}, 'socket = "/tmp/fs.sock"', {}),
    ("MEMD_HOME beats file home", {"MEMD_HOME": "/tmp/eh"}, 'home = "/tmp/fh"', {}),
    ("--home beats MEMD_HOME", {"MEMD_HOME": "/tmp/eh"}, "", {"home": "/tmp/flag"}),
    ("file socket beats --home", {}, 'socket = "/tmp/fs.sock"', {"home": "/tmp/flag"}),
    ("XDG_DATA_HOME", {"XDG_DATA_HOME": "/tmp/xdg"}, "", {}),
    ("relative home", {}, 'home = "rel/h"', {}),
    ("timeouts", {"MEMD_HOOK_TIMEOUT_SECONDS": "3.5"}, "hook_timeout_seconds = 9", {}),
    ("file timeout", {}, "hook_timeout_seconds = 0.75\nsearch_limit = 5", {}),
    ("no such keys", {}, "# home = '/nope'\nsearch_limit = 3", {}),
]


@pytest.mark.parametrize("where", ["MEMD_CONFIG", "default location", "--config"])
@pytest.mark.parametrize(("case", "environ", "toml", "flags"), SOCKET_CASES)
def test_locate_agrees_with_settings(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    case: str,
    environ: dict[str, str],
    toml: str,
    flags: dict[str, str],
) -> None:
    """The hook and the CLI's socket lookup (memd.hook.locate) must find what the daemon's
    Settings find, whichever way a user configured it."""
    from memd.settings import load_settings

    monkeypatch.delenv("MEMD_HOME")
    config = tmp_path / "cfg dir" / "memd.toml"
    flags = dict(flags)
    if where == "MEMD_CONFIG":
        monkeypatch.setenv("MEMD_CONFIG", str(config))
    elif where == "default location":
        monkeypatch.delenv("MEMD_CONFIG")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        config = tmp_path / "xdg" / "memd" / "memd.toml"
    else:
        monkeypatch.setenv("MEMD_CONFIG", str(tmp_path / "not this one.toml"))
        flags["config"] = str(config)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    if toml:
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(toml + "\n")
    settings = load_settings(**flags)
    socket, timeout = hook.locate(os.environ.get, **flags)
    assert str(Path(socket)) == str(settings.socket_path), case
    assert timeout == settings.hook_timeout_seconds, case


def test_installed_form_carries_socket_and_timeout(fake: FakeDaemon, tmp_path: Path) -> None:
    """`--socket` on the command line beats the environment: it is what `memd install` wrote."""
    fake.reply = encode_reply({"ok": True, "context": "from the flag"}, hook=True)
    cmd = hook.command("user-prompt-submit", socket=fake.path, timeout=1.5)
    assert cmd.endswith(f"user-prompt-submit --socket {fake.path} --timeout 1.5")
    env = {**os.environ, "MEMD_SOCKET": str(tmp_path / "elsewhere.sock")}
    out = subprocess.run(
        cmd, shell=True, input=json.dumps(PAYLOAD), capture_output=True, text=True, env=env
    )
    assert (out.returncode, out.stderr) == (0, "")
    # A prompt hook answers in Claude Code's JSON form (plain stdout would never reach the model).
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == "from the flag"
    assert hook.command("stop", socket="/s") == hook.command("stop", socket="/s", timeout=2.0)


def test_argument_parsing() -> None:
    assert hook.parse_args(["stop"]) == ("stop", "", "")
    assert hook.parse_args(["stop", "--socket", "/a b/m.sock"]) == ("stop", "/a b/m.sock", "")
    assert hook.parse_args(["--socket=/m", "--timeout", "3", "stop"]) == ("stop", "/m", "3")
    for bad in ([], ["stop", "--socket"], ["stop", "--verbose"], ["stop", "stop"], ["nope"]):
        assert hook.parse_args(bad) is None, bad
