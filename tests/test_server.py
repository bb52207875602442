"""The socket server: bad clients never hurt good ones; other users are refused."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path

from memd import hook, protocol
from memd.daemon import housekeeping
from memd.daemon.app import App
from memd.daemon.server import Server, encode_reply
from memd.daemon.unixsocket import SocketFile, clear_stale_socket, peer_uid, prepare_socket_dir
from memd.errors import ServerError

IDLE = 1.5


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("server")
    sock = short_socket_path()
    env = daemon_env(root, sock, MEMD_CLIENT_IDLE_SECONDS=str(IDLE))
    proc = DaemonProcess(env, root / "serve.log").start()
    try:
        yield proc
    finally:
        code = proc.stop()
        remove_socket_dir(sock)
        assert code == 0, proc.log()


def connect(path: str, timeout: float = 10.0) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def read_line(s: socket.socket) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def ask(s: socket.socket, raw: bytes) -> dict:
    s.sendall(raw)
    line = read_line(s)
    assert line, "the daemon closed the connection instead of replying"
    return json.loads(line)


def test_bad_requests_get_error_replies_and_the_connection_keeps_working(
    daemon: DaemonProcess,
) -> None:
    s = connect(daemon.socket)
    try:
        cases = {
            b"\x00\xff\xfe\x80 binary garbage\n": "malformed",
            b"this is not json\n": "malformed",
            b"[1, 2, 3]\n": "malformed",
            b'"just a string"\n': "malformed",
            b'{"no": "cmd"}\n': "unknown command",
            b'{"cmd": "rm_rf"}\n': "unknown command",
            b'{"cmd": "__init__"}\n': "unknown command",
            b'{"cmd": 42}\n': "unknown command",
            b'{"cmd": "search"}\n': "bad arguments",
            b'{"cmd": "search", "query": "x", "bogus": 1}\n': "bad arguments",
            b'{"cmd": "show", "id": "zzzz"}\n': "no memory",
            b'{"cmd": "hook", "event": "nope", "payload": {}}\n': "unknown hook event",
            b'{"cmd": "hook", "event": "stop", "payload": [1]}\n': "JSON object",
        }
        for raw, expected in cases.items():
            reply = ask(s, raw)
            assert reply["ok"] is False, raw
            assert expected in reply["error"], (raw, reply)
        assert ask(s, b'{"cmd": "ping"}\n')["ok"] is True
    finally:
        s.close()


def test_many_requests_on_one_connection(daemon: DaemonProcess) -> None:
    s = connect(daemon.socket)
    try:
        s.sendall(b'{"cmd":"ping"}\n' * 20)
        buf = b""
        while buf.count(b"\n") < 20:
            chunk = s.recv(65536)
            assert chunk
            buf += chunk
        assert all(json.loads(line)["ok"] for line in buf.splitlines())
    finally:
        s.close()


def test_last_line_without_newline_is_answered_at_eof(daemon: DaemonProcess) -> None:
    s = connect(daemon.socket)
    try:
        s.sendall(b'{"cmd":"ping"}')
        s.shutdown(socket.SHUT_WR)
        assert json.loads(read_line(s))["pong"] is True
    finally:
        s.close()


def test_line_over_one_mib_is_refused(daemon: DaemonProcess) -> None:
    s = connect(daemon.socket)
    try:
        big = b'{"cmd":"search","query":"' + b"a" * (protocol.MAX_LINE + 1000) + b'"}\n'
        try:
            s.sendall(big)
            line = read_line(s)
        except (BrokenPipeError, ConnectionResetError):
            line = b""  # closed while we were still sending: also a refusal
        if line:
            reply = json.loads(line)
            assert reply["ok"] is False and "1 MiB" in reply["error"]
        assert s.recv(10) == b""  # and the connection is closed
    finally:
        s.close()
    assert daemon.request({"cmd": "ping"})["ok"]


def test_half_open_and_slow_clients_do_not_block_others(daemon: DaemonProcess) -> None:
    silent = connect(daemon.socket)  # connects, sends nothing
    partial = connect(daemon.socket)  # starts a line, never ends it
    partial.sendall(b'{"cmd": "pi')
    try:
        started = time.monotonic()
        for _ in range(10):
            assert daemon.request({"cmd": "ping"}, timeout=5)["ok"]
        assert time.monotonic() - started < 5
        # Both are dropped after the idle timeout.
        for s in (silent, partial):
            s.settimeout(IDLE + 5)
            assert s.recv(10) == b""
        assert time.monotonic() - started < IDLE + 5
    finally:
        silent.close()
        partial.close()


def test_a_client_that_vanishes_mid_request_is_harmless(daemon: DaemonProcess) -> None:
    for _ in range(5):
        s = connect(daemon.socket)
        s.sendall(b'{"cmd":"status"}\n')
        s.close()  # gone before the reply
    assert daemon.request({"cmd": "ping"})["ok"]


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another uid needs root")
def test_another_user_is_refused(daemon: DaemonProcess) -> None:
    sock_dir = os.path.dirname(daemon.socket)
    # Open the door on purpose, so the refusal comes from the peer uid check itself.
    os.chmod(sock_dir, 0o711)
    os.chmod(daemon.socket, 0o666)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become nobody, then knock
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            c = connect(daemon.socket)
            # Refused at accept, the send may fail: the reply is already waiting to be read.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                c.sendall(b'{"cmd":"status"}\n')
            os.write(write_end, read_line(c) or b"closed\n")
        except BaseException as exc:
            os.write(write_end, f"child failed: {exc!r}\n".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            answer = pipe.read()
        os.waitpid(pid, 0)
    finally:
        os.chmod(daemon.socket, 0o600)
        os.chmod(sock_dir, 0o700)
    assert answer.startswith(b"{"), answer
    reply = json.loads(answer)
    assert reply["ok"] is False
    assert "permission denied" in reply["error"]
    assert "memories" not in reply
    status = daemon.request({"cmd": "status"})
    assert status["requests"]["refused"] >= 1
    assert "refused a client with uid 65534" in daemon.log()


# ---- the pieces, in-process


def test_peer_uid_is_our_uid() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        assert peer_uid(a) == os.getuid()
    finally:
        a.close()
        b.close()


def test_stale_socket_rules(short_socket: str) -> None:
    clear_stale_socket(Path(short_socket))  # nothing there: fine
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(short_socket)
    dead.close()
    clear_stale_socket(Path(short_socket))
    assert not os.path.exists(short_socket)

    live = socket.socket(socket.AF_UNIX)
    live.bind(short_socket)
    live.listen(1)
    try:
        with pytest.raises(ServerError, match="listening"):
            clear_stale_socket(Path(short_socket))
        assert stat.S_ISSOCK(os.lstat(short_socket).st_mode)
    finally:
        live.close()
        os.unlink(short_socket)

    Path(short_socket).write_text("not a socket")
    with pytest.raises(ServerError, match="not a socket"):
        clear_stale_socket(Path(short_socket))
    os.unlink(short_socket)


def test_socket_file_is_private_and_removed_only_while_it_is_ours(short_socket: str) -> None:
    first = SocketFile(short_socket)
    first.prepare()
    listening = first.bind()
    assert stat.S_IMODE(os.lstat(short_socket).st_mode) == 0o600
    listening.close()
    newer = socket.socket(socket.AF_UNIX)  # another daemon's socket, moved onto the same path
    newer.bind(short_socket + "2")  # while the first exists: another inode
    os.rename(short_socket + "2", short_socket)
    try:
        first.remove()
        assert os.path.exists(short_socket)
    finally:
        newer.close()
    second = SocketFile(short_socket)
    second.prepare()  # nobody listens on it: stale, removed
    second.bind().close()
    second.remove()
    assert not os.path.exists(short_socket)


def test_socket_dir_is_made_private(tmp_path: Path) -> None:
    fresh = tmp_path / "a" / "b" / "m.sock"
    prepare_socket_dir(fresh)
    assert stat.S_IMODE(fresh.parent.stat().st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    prepare_socket_dir(loose / "m.sock")
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    prepare_socket_dir(shared / "m.sock")  # like /tmp: never tightened
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777


def test_hook_reply_is_readable_without_json() -> None:
    text = 'héllo 世界 😀 "quoted" back\\slash\nnew line\ttab </memd-context>'
    raw = encode_reply({"ok": True, "context": text}, hook=True)
    assert raw.isascii()
    assert json.loads(raw) == {"ok": True, "context": text}
    assert hook.context_of(raw) == text
    assert hook.context_of(encode_reply({"ok": False, "error": "x"}, hook=True)) == ""


def test_concurrent_bad_and_good_clients(daemon: DaemonProcess) -> None:
    errors: list[BaseException] = []

    def bad() -> None:
        try:
            s = connect(daemon.socket)
            s.sendall(os.urandom(4096))
            s.close()
        except OSError:
            pass

    def good() -> None:
        try:
            assert daemon.request({"cmd": "ping"}, timeout=10)["ok"]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bad if n % 2 else good) for n in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert daemon.request({"cmd": "ping"})["ok"]


def test_heap_is_trimmed_after_activity_once_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import sys

    from memd.settings import Settings

    if sys.platform.startswith("linux"):
        assert housekeeping.trim_heap() is True  # glibc's malloc_trim is there and runs
    calls: list[float] = []
    monkeypatch.setattr(housekeeping, "trim_heap", lambda: calls.append(time.monotonic()))
    settings = Settings(home=tmp_path / "home", config=tmp_path / "none.toml")
    srv = Server(
        App(settings, resident=True), settings
    )  # never opened: nothing here reads the store
    try:
        asyncio.run(srv.maybe_trim())
        assert calls == []  # nothing happened yet: nothing to give back
        srv._trimmed = (time.monotonic(), 0)  # as if it had just trimmed
        srv.counters["requests"] += 1
        srv.last_request_at = time.monotonic()
        asyncio.run(srv.maybe_trim())
        assert calls == []  # a request just arrived: a hook may be right behind it
        srv._trimmed = (time.monotonic() - housekeeping.TRIM_EVERY_SECONDS - 1, 0)
        asyncio.run(srv.maybe_trim())
        assert calls == []  # busy, but not for TRIM_BUSY_SECONDS yet
        srv.last_request_at -= housekeeping.TRIM_IDLE_SECONDS + 1
        asyncio.run(srv.maybe_trim())
        assert len(calls) == 1
        srv.counters["requests"] += 1
        asyncio.run(srv.maybe_trim())
        assert len(calls) == 1  # at most every TRIM_EVERY_SECONDS
        srv._trimmed = (srv._trimmed[0] - housekeeping.TRIM_EVERY_SECONDS, srv._trimmed[1])
        asyncio.run(srv.maybe_trim())
        assert len(calls) == 2
        srv.counters["requests"] += 1
        srv.last_request_at = time.monotonic()  # steady load ...
        srv._trimmed = (time.monotonic() - housekeeping.TRIM_BUSY_SECONDS - 1, 0)
        asyncio.run(srv.maybe_trim())
        assert len(calls) == 3  # ... still trims every TRIM_BUSY_SECONDS
    finally:
        srv.close_pools(1)


def quiet_since(srv: Server, seconds: float) -> None:
    """As if neither a request nor heavy work had come for ``seconds``."""
    srv.last_request_at = time.monotonic() - seconds
    srv._heavy_seen = (time.monotonic() - seconds, srv._heavy_seen[1])


def test_library_pages_are_released_after_heavy_work_once_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from memd.settings import Settings

    calls: list[float] = []

    def release() -> int:
        calls.append(time.monotonic())
        return 4096

    monkeypatch.setattr(housekeeping, "release_library_pages", release)
    settings = Settings(home=tmp_path / "home", config=tmp_path / "none.toml")
    srv = Server(
        App(settings, resident=True), settings
    )  # never opened: nothing here reads the store
    try:
        asyncio.run(srv.maybe_release())
        assert calls == []  # nothing ran since start-up (which releases on its own)
        srv.counters["requests"] += 5
        srv.last_request_at = time.monotonic() - housekeeping.RELEASE_IDLE_SECONDS - 1
        asyncio.run(srv.maybe_release())
        assert calls == []  # hooks alone never: the next one would pay the faults
        srv.extraction_runs += 1  # the extraction loop's poll found nothing: not heavy
        asyncio.run(srv.maybe_release())
        assert calls == []
        srv.segments_extracted += 2
        srv.last_request_at = time.monotonic()
        asyncio.run(srv.maybe_release())
        assert calls == []  # heavy work, but a request just arrived: a hook may follow
        srv.last_request_at -= housekeeping.RELEASE_IDLE_SECONDS + 1
        asyncio.run(srv.maybe_release())
        assert calls == []  # the work was done just now: a backfill may still be running
        for _ in range(3):  # one long request extracting segment after segment
            srv.segments_extracted += 1
            quiet_since(srv, housekeeping.RELEASE_IDLE_SECONDS + 1)
            asyncio.run(srv.maybe_release())
        assert calls == []
        quiet_since(srv, housekeeping.RELEASE_IDLE_SECONDS + 1)
        asyncio.run(srv.maybe_release())
        assert len(calls) == 1
        assert srv.library_pages == {"releases": 1, "last_bytes": 4096, "total_bytes": 4096}
        asyncio.run(srv.maybe_release())
        assert len(calls) == 1  # once per batch of work
        srv.segments_extracted += 1
        asyncio.run(srv.maybe_release())
        quiet_since(srv, housekeeping.RELEASE_IDLE_SECONDS + 1)
        asyncio.run(srv.maybe_release())
        assert len(calls) == 2
    finally:
        srv.close_pools(1)


def test_the_stored_texts_model_graph_is_released_after_a_write_once_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memd add` loads the float graph that embeds stored texts; once the daemon is quiet it
    drops it (with the library pages) and the next stored text loads it again."""
    import asyncio

    from memd.settings import Settings

    monkeypatch.setattr(housekeeping, "release_library_pages", lambda: 4096)

    settings = Settings(home=tmp_path / "home", config=tmp_path / "none.toml")
    app = App(settings, resident=True)
    embedder = app.store.embedder.load()
    srv = Server(app, settings)
    try:
        srv.last_request_at = time.monotonic() - housekeeping.RELEASE_IDLE_SECONDS - 1
        asyncio.run(srv.maybe_release())
        assert srv.library_pages["releases"] == 0  # prompts alone: nothing to release
        embedder.embed(["We deploy with the release workflow."])
        assert embedder._backend.holds_passages
        srv.last_request_at = time.monotonic()
        asyncio.run(srv.maybe_release())
        assert embedder._backend.holds_passages  # a request just came: not yet
        quiet_since(srv, housekeeping.RELEASE_IDLE_SECONDS + 1)
        asyncio.run(srv.maybe_release())
        assert not embedder._backend.holds_passages
        assert srv.library_pages["releases"] == 1
        assert embedder.embed(["We deploy with the release workflow."])
        assert embedder.passage_loads == 2
    finally:
        srv.close_pools(1)


def test_daemon_gives_library_pages_back_after_start_up(daemon: DaemonProcess) -> None:
    deadline = time.monotonic() + 30
    while True:
        pages = daemon.request({"cmd": "status"})["library_pages"]
        if pages["releases"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert pages["releases"] >= 1 and pages["last_bytes"] > 10 << 20, pages
    assert pages["total_bytes"] >= pages["last_bytes"]
    assert "of library pages (after start-up)" in daemon.log_path.read_text()
    # The model and LanceDB fault their code back in and answer.
    found = daemon.request({"cmd": "search", "query": "which database", "limit": 3})
    assert found["ok"] is True, found


def test_app_commands_answer_by_their_socket_names(daemon: DaemonProcess) -> None:
    listed = daemon.request({"cmd": "list", "all_projects": True})
    assert listed["ok"] is True and isinstance(listed["memories"], list)
    assert listed["total"] == len(listed["memories"])
    # The method behind `list` is not a command: only the table's names are.
    renamed = daemon.request({"cmd": "list_memories"})
    assert renamed["ok"] is False and "unknown command" in renamed["error"]
    bad = daemon.request({"cmd": "list", "nope": 1})
    assert bad["ok"] is False and bad["error"].startswith("bad arguments for list")
    jobs = daemon.request({"cmd": "jobs"})
    assert jobs["ok"] is True and jobs["scheduled"] is True and jobs["via"] == "daemon"
    # The CLI's progress callback never comes over the wire.
    sneaky = daemon.request({"cmd": "ingest", "paths": [], "progress": 1})
    assert sneaky["ok"] is False and "progress" in sneaky["error"]
    assert daemon.request({"cmd": "ping"})["ok"]


def test_every_app_command_names_an_app_method() -> None:
    from memd.daemon.commands import APP_COMMANDS

    for name, command in APP_COMMANDS.items():
        assert callable(getattr(App, command.method, None)), name
        assert not hasattr(Server, f"cmd_{name}"), name  # one handler per name
