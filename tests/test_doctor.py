"""`memd doctor` in a healthy set-up and in broken ones; every failure names its fix.

Most tests use a stand-in daemon: a real Unix-socket server in a thread that answers `status`
the way `memd serve` does (the protocol module's framing), so a test can choose the version
and the error replies. test_doctor_against_a_real_daemon runs the real `memd serve`. systemctl is a recording script first on PATH, as in
test_install.py, because the real one would touch the real user session.
"""

from __future__ import annotations

import json
import os
import socketserver
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path

from memd import __version__, protocol
from memd.cli import main
from memd.models import Memory
from memd.settings import load_settings
from memd.setup import doctor, install
from memd.setup import service as user_service
from memd.setup.check import Check
from memd.setup.doctor import Doctor
from memd.store.table import MemoryStore

FAKE_SYSTEMCTL = r"""#!/bin/sh
case "$2" in
  show-environment) [ -e "$FAKE_STATE/bus" ] || exit 1 ;;
  is-enabled) if [ -e "$FAKE_STATE/enabled" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if [ -e "$FAKE_STATE/enabled" ]; then echo active; else echo inactive; exit 3; fi ;;
  enable) touch "$FAKE_STATE/enabled" ;;
  disable) rm -f "$FAKE_STATE/enabled" ;;
esac
exit 0
"""


@pytest.fixture(autouse=True)
def fake_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "systemctl"
    script.write_text(FAKE_SYSTEMCTL)
    script.chmod(0o755)
    state = tmp_path / "fakestate"
    state.mkdir()
    monkeypatch.setenv("FAKE_STATE", str(state))
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return state


class StandInDaemon(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, reply: dict[str, Any]) -> None:
        self.reply = reply
        super().__init__(path, StatusHandler)


class StatusHandler(socketserver.StreamRequestHandler):
    server: StandInDaemon

    def handle(self) -> None:
        line = self.rfile.readline()
        req = protocol.decode(line)
        if req.get("cmd") == "status":
            self.wfile.write(protocol.encode(self.server.reply))
        else:
            self.wfile.write(protocol.encode(protocol.error("unknown command")))


@pytest.fixture
def daemon(short_socket: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInDaemon]:
    monkeypatch.setenv("MEMD_SOCKET", short_socket)
    server = StandInDaemon(
        short_socket,
        {
            "ok": True,
            "running": True,
            "version": __version__,
            "pid": os.getpid(),
            "memories": {"total": 3, "by_project": {}, "by_kind": {}},
        },
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def healthy(daemon: StandInDaemon, fake_systemctl: Path) -> StandInDaemon:
    """Transcripts, hooks, an enabled service and a running daemon of the same version."""
    settings = load_settings()
    project = settings.transcripts_dir / "-home-u-proj"
    project.mkdir(parents=True)
    (project / "abc.jsonl").write_text("{}\n")
    install.install_hooks()
    (fake_systemctl / "bus").touch()
    user_service.install_service(settings, system="Linux")
    return daemon


def doctor_for() -> Doctor:
    return Doctor(load_settings(), system="Linux")


def assert_fails_with_fix(check: Check, fix: str) -> None:
    assert check.level == "fail", check
    assert not check.ok
    assert fix in check.fix, check


# ---------------------------------------------------------------- healthy


def test_healthy_setup_exits_zero_with_every_check_ok(healthy: StandInDaemon) -> None:
    result = CliRunner().invoke(main, ["doctor", "--json"])
    report = json.loads(result.output)
    levels = {c["name"]: c["level"] for c in report["checks"]}
    assert levels == dict.fromkeys(
        [
            "python",
            "home",
            "daemon",
            "store",
            "schema",
            "model",
            "transcripts",
            "hooks",
            "mcp",
            "service",
            "inotify",
            "disk",
            "extractor",
            "sync",
        ],
        "ok",
    ), report
    assert report["ok"] is True
    assert result.exit_code == 0
    assert all(set(c) == {"name", "ok", "level", "detail", "fix"} for c in report["checks"])
    assert "loads offline (384 dims" in next(
        c["detail"] for c in report["checks"] if c["name"] == "model"
    )


def test_text_report_lists_failures_with_their_fix(healthy: StandInDaemon) -> None:
    settings = load_settings()
    for child in settings.transcripts_dir.rglob("*.jsonl"):
        child.unlink()
    for child in sorted(settings.transcripts_dir.rglob("*"), reverse=True):
        child.rmdir()
    settings.transcripts_dir.rmdir()
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    fail = next(i for i, line in enumerate(lines) if line.startswith("FAIL"))
    assert "transcripts" in lines[fail]
    assert lines[fail + 1].strip() == f"fix: mkdir -p {settings.transcripts_dir}"
    assert lines[-1] == "1 check(s) failed"


def test_store_opens_directly_when_the_daemon_is_down() -> None:
    check = doctor_for().check_store()
    assert check.level == "ok", check
    assert "table opens (0 memories" in check.detail


# ---------------------------------------------------------------- broken


def test_no_hooks() -> None:
    assert_fails_with_fix(doctor_for().check_hooks(), "memd install --hooks")


def test_hooks_pointing_at_a_missing_file() -> None:
    install.install_hooks(hook_path=Path("/nonexistent/bin/memd-hook"))
    check = doctor_for().check_hooks()
    assert_fails_with_fix(check, "memd install --hooks")
    assert "/nonexistent/bin/memd-hook, which is not an executable file" in check.detail


def test_hooks_of_another_installation_warn(tmp_path: Path) -> None:
    other = tmp_path / "old-venv" / "memd-hook"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    install.install_hooks(hook_path=other)
    check = doctor_for().check_hooks()
    assert check.level == "warn" and check.ok
    assert check.fix == "memd install --hooks"


def test_hooks_dialing_another_socket_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's socket moved (here: the config file says so) after `memd install`."""
    install.install_hooks()
    assert doctor_for().check_hooks().level == "ok"
    config = Path(os.environ["MEMD_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'socket = "{tmp_path}/moved.sock"\n')
    check = doctor_for().check_hooks()
    assert_fails_with_fix(check, "memd install --hooks")
    assert f"but the daemon listens on {tmp_path}/moved.sock" in check.detail
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1
    assert "fix: memd install --hooks" in result.output
    install.install_hooks()
    assert doctor_for().check_hooks().level == "ok"


def test_old_console_script_hooks_warn_and_are_replaced(settings_path_exists: None) -> None:
    """Entries of earlier versions (`memd-hook EVENT`) still dial the right socket (the hook
    reads the environment and the config file), so doctor only warns; install replaces them."""
    hook = Path(sys.executable).parent / "memd-hook"
    path = install.claude_settings_path()
    old = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": f"{hook} {arg}", "timeout": t}]}]
            for event, (arg, t) in install.HOOK_EVENTS.items()
        }
    }
    path.write_text(json.dumps(old))
    check = doctor_for().check_hooks()
    assert check.level == "warn" and check.fix == "memd install --hooks", check
    assert "-I -S" in check.detail
    install.install_hooks()
    data = json.loads(path.read_text())
    for event in install.HOOK_EVENTS:
        (group,) = data["hooks"][event]
        (entry,) = group["hooks"]
        assert "memd-hook" not in entry["command"] and "/memd/hookrun.py" in entry["command"]
    assert doctor_for().check_hooks().level == "ok"


@pytest.fixture
def settings_path_exists() -> None:
    install.claude_settings_path().parent.mkdir(parents=True, exist_ok=True)


def test_hooks_with_invalid_settings_json() -> None:
    path = install.claude_settings_path()
    path.parent.mkdir(parents=True)
    path.write_text("{ nope")
    check = doctor_for().check_hooks()
    assert check.level == "fail"
    assert "line 1, column 3" in check.detail
    assert str(path) in check.fix


def test_repair_installs_missing_hooks() -> None:
    results = {c.name: c for c in doctor_for().run(repair=True)}
    assert results["hooks"].level == "ok"
    assert "repair: installed hooks" in results["hooks"].detail
    assert results["transcripts"].level == "ok"


def test_daemon_down() -> None:
    check = doctor_for().check_daemon()
    assert_fails_with_fix(check, "memd install --service")
    assert "not reachable" in check.detail
    user_service.install_service(load_settings(), system="Linux")
    assert_fails_with_fix(doctor_for().check_daemon(), "systemctl --user start memd.service")


def test_daemon_of_another_version(daemon: StandInDaemon) -> None:
    daemon.reply = {**daemon.reply, "version": "0.0.1"}
    check = doctor_for().check_daemon()
    assert_fails_with_fix(check, f"kill {os.getpid()} && memd serve")
    assert f"runs memd 0.0.1, this CLI is {__version__}" in check.detail
    user_service.install_service(load_settings(), system="Linux")
    assert_fails_with_fix(doctor_for().check_daemon(), "systemctl --user restart memd.service")


def test_daemon_answering_an_error(daemon: StandInDaemon) -> None:
    daemon.reply = protocol.error("store is closed")
    check = doctor_for().check_daemon()
    assert check.level == "fail" and "store is closed" in check.detail
    assert check.fix == "memd serve"


def test_memd_home_missing_or_not_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_fails_with_fix(doctor_for().check_home(), "mkdir -p -m 700")
    # A regular file where the directory should be: writing into it fails even for root.
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("MEMD_HOME", str(blocker))
    check = doctor_for().check_home()
    assert_fails_with_fix(check, f"chmod u+rwx {blocker}")
    assert "not writable" in check.detail


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_memd_home_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ro"
    home.mkdir(mode=0o500)
    monkeypatch.setenv("MEMD_HOME", str(home))
    try:
        assert_fails_with_fix(doctor_for().check_home(), "chmod u+rwx")
    finally:
        home.chmod(0o700)


def test_missing_transcripts_dir() -> None:
    settings = load_settings()
    check = doctor_for().check_transcripts()
    assert_fails_with_fix(check, f"mkdir -p {settings.transcripts_dir}")


def test_anthropic_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EXTRACTOR", "anthropic")
    check = doctor_for().check_extractor()
    assert_fails_with_fix(check, "anthropic_api_key")
    assert "chmod 600" in check.fix
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert doctor_for().check_extractor().level == "ok"


def test_claude_cli_not_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EXTRACTOR", "claude-cli")
    monkeypatch.setenv("MEMD_CLAUDE_CLI_PATH", "claude-not-installed-here")
    assert_fails_with_fix(
        doctor_for().check_extractor(), "npm install -g @anthropic-ai/claude-code"
    )
    fake = tmp_path / "fakebin" / "claude-not-installed-here"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert doctor_for().check_extractor().level == "ok"


def test_service_not_installed_or_disabled(fake_systemctl: Path) -> None:
    assert_fails_with_fix(doctor_for().check_service(), "memd install --service")
    user_service.install_service(load_settings(), system="Linux")  # no bus: file only
    unknown = doctor_for().check_service()
    assert unknown.level == "warn" and "unknown" in unknown.detail
    (fake_systemctl / "bus").touch()
    assert_fails_with_fix(
        doctor_for().check_service(), "systemctl --user enable --now memd.service"
    )


def test_inotify_limit_too_low(tmp_path: Path) -> None:
    watches = tmp_path / "max_user_watches"
    watches.write_text("4096\n")
    check = doctor_for().check_inotify(watches)
    assert_fails_with_fix(check, "fs.inotify.max_user_watches=524288")
    assert "sysctl" in check.fix
    watches.write_text("8192\n")
    assert doctor_for().check_inotify(watches).level == "ok"


def test_inotify_limit_scales_with_directories_and_files_count_files(tmp_path: Path) -> None:
    """The watcher takes one inotify watch per directory; the transcripts check counts files."""
    root = load_settings().transcripts_dir
    for i in range(60):
        d = root / f"p{i}"
        d.mkdir(parents=True)
        for j in range(100):
            (d / f"{j}.jsonl").touch()
        (d / f"{i}" / "subagents").mkdir(parents=True)
    watches = tmp_path / "max_user_watches"
    watches.write_text("8192\n")
    check = doctor_for().check_inotify(watches)
    assert check.level == "ok" and "(181 directories to watch)" in check.detail, check
    transcripts = doctor_for().check_transcripts()
    assert transcripts.detail.endswith("(6000 transcript files)"), transcripts
    for i in range(5500):
        (root / "p0" / f"s{i}").mkdir()
    check = doctor_for().check_inotify(watches)
    assert check.level == "fail"
    assert "5681 directories to watch need at least 8521" in check.detail
    assert doctor_for().check_transcripts().detail.endswith("(6000 transcript files)")


def test_a_daemon_in_a_terminal_without_the_service_is_a_note(
    daemon: StandInDaemon, fake_systemctl: Path
) -> None:
    """The README's quick start runs `memd serve` in a terminal: no service is not a failure
    while a daemon answers; without a daemon it is."""
    doc = doctor_for()
    assert doc.check_daemon().level == "ok"
    check = doc.check_service()
    assert check.level == "note" and check.ok, check
    assert f"the daemon (pid {os.getpid()}) runs outside it" in check.detail
    assert check.fix == "memd install --service"
    user_service.install_service(load_settings(), system="Linux")
    (fake_systemctl / "bus").touch()  # installed but not enabled: a note too
    check = doc.check_service()
    assert check.level == "note" and "systemctl --user enable --now" in check.fix, check
    result = CliRunner().invoke(main, ["doctor"])
    assert "note  service" in result.output and "to change it: systemctl" in result.output


def test_low_disk_warns_then_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "DISK_WARN_BYTES", 1 << 62)
    check = doctor_for().check_disk()
    assert check.level == "warn" and check.ok and check.fix
    monkeypatch.setattr(doctor, "DISK_FAIL_BYTES", 1 << 61)
    assert_fails_with_fix(doctor_for().check_disk(), "memd jobs run cleanup")


def test_old_python() -> None:
    check = doctor_for().check_python((3, 10, 14))
    assert_fails_with_fix(check, "python3.11")
    assert "3.10.14" in check.detail


def test_model_that_cannot_load_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING_MODEL", "nobody/no-such-model")
    check = doctor_for().check_model()
    assert_fails_with_fix(check, "HF_HUB_OFFLINE=0")
    assert "nobody/no-such-model does not load offline" in check.detail


def test_damaged_table_is_rebuilt_from_the_journal() -> None:
    settings = load_settings()
    store = MemoryStore(settings).open()
    store.write([Memory(text="we deploy with kamal", kind="decision")], {})
    store.close()
    for manifest in (settings.home / "store").rglob("*.manifest"):
        manifest.write_bytes(b"")  # what a power cut can leave behind
    broken = doctor_for().check_store()
    assert_fails_with_fix(broken, "memd doctor --repair")
    result = CliRunner().invoke(main, ["doctor", "--repair", "--json"])
    report = {c["name"]: c for c in json.loads(result.output)["checks"]}
    assert report["store"]["level"] == "ok", report["store"]
    assert "rebuilt the table from the journal (1 memories)" in report["store"]["detail"]
    assert "table opens (1 memories" in report["store"]["detail"]


def test_every_failure_in_a_bare_setup_has_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EXTRACTOR", "anthropic")
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert {c["name"] for c in failed} >= {"daemon", "transcripts", "hooks", "service", "extractor"}
    assert all(c["fix"] for c in failed), failed


def test_service_running_a_memd_that_no_longer_exists(fake_systemctl: Path) -> None:
    (fake_systemctl / "bus").touch()
    user_service.install_service(
        load_settings(), system="Linux", memd_path=Path("/gone/venv/bin/memd")
    )
    check = doctor_for().check_service()
    assert_fails_with_fix(check, "memd install --service")
    assert "/gone/venv/bin/memd, which is not an executable file" in check.detail
    user_service.install_service(load_settings(), system="Linux")  # re-rendered: the real memd
    assert doctor_for().check_service().level == "ok"


def test_launchd_agent_checks(fake_systemctl: Path, tmp_path: Path) -> None:
    launchctl = tmp_path / "fakebin" / "launchctl"
    launchctl.write_text(
        '#!/bin/sh\n[ "$1" = print ] && [ ! -e "$FAKE_STATE/loaded" ] && exit 113\n'
        'touch "$FAKE_STATE/loaded"; exit 0\n'
    )
    launchctl.chmod(0o755)
    mac = Doctor(load_settings(), system="Darwin")
    assert_fails_with_fix(mac.check_service(), "memd install --service")
    user_service.install_service(load_settings(), system="Darwin")
    assert mac.check_service().level == "ok"
    assert mac.check_inotify().detail == "not applicable (FSEvents)"
    (fake_systemctl / "loaded").unlink()
    assert_fails_with_fix(mac.check_service(), f"launchctl bootstrap gui/{os.getuid()}")


def test_hooks_disabled_globally_warn() -> None:
    install.install_hooks()
    path = install.claude_settings_path()
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "disableAllHooks": True}))
    check = doctor_for().check_hooks()
    assert check.level == "warn" and "disableAllHooks" in check.detail


@pytest.mark.slow
def test_doctor_against_a_real_daemon(tmp_path: Path, fake_systemctl: Path) -> None:
    """End to end: `memd install`, a real `memd serve`, then `memd doctor` as a user runs them."""
    sock = short_socket_path()
    env = daemon_env(tmp_path / "e2e", sock)
    (fake_systemctl / "bus").touch()
    (Path(env["HOME"]) / ".claude" / "projects" / "-p" / "s.jsonl").parent.mkdir(parents=True)
    (Path(env["HOME"]) / ".claude" / "projects" / "-p" / "s.jsonl").write_text("{}\n")
    proc = DaemonProcess(env, tmp_path / "serve.log")
    try:
        installed = proc.memd("install")
        assert installed.returncode == 0, installed.stderr
        assert "service enabled and started" in installed.stdout
        proc.start()
        healthy = proc.memd("doctor", "--json")
        report = json.loads(healthy.stdout)
        assert healthy.returncode == 0, report
        assert all(c["level"] == "ok" for c in report["checks"]), report
        daemon_check = next(c for c in report["checks"] if c["name"] == "daemon")
        assert f"version {__version__}, pid {proc.proc.pid}" in daemon_check["detail"]  # type: ignore[union-attr]
        assert proc.stop() == 0
    finally:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.stop()
        remove_socket_dir(sock)


def test_model_check_says_which_languages_the_model_covers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memd.embedding.models import E5_MODEL

    check = doctor_for().check_model()
    assert check.level == "ok", check
    assert "English only" in check.detail and E5_MODEL in check.detail
    monkeypatch.setenv("MEMD_EMBEDDING_MODEL", E5_MODEL)
    check = doctor_for().check_model()
    assert check.level == "ok", check.detail
    assert check.detail.startswith(f"{E5_MODEL}-centred@")
    assert "Chinese and English" in check.detail


@pytest.mark.slow
def test_doctor_after_the_readme_quick_start_exits_zero(tmp_path: Path) -> None:
    """`make serve` (a real `memd serve` in the foreground), then `memd install` as the README
    says, where no systemd user session answers: `memd doctor` exits 0. With the hooks only
    (no service at all) too: the service line is a note."""
    sock = short_socket_path()
    env = daemon_env(tmp_path / "qs", sock)
    transcript = Path(env["HOME"]) / ".claude" / "projects" / "-p" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("{}\n")
    proc = DaemonProcess(env, tmp_path / "serve.log")
    try:
        proc.start()
        hooks_only = proc.memd("install", "--hooks")
        assert hooks_only.returncode == 0, hooks_only.stderr
        doctor_run = proc.memd("doctor")
        assert doctor_run.returncode == 0, doctor_run.stdout
        assert "note  service" in doctor_run.stdout
        assert doctor_run.stdout.rstrip().endswith("all checks passed")
        everything = proc.memd("install")
        assert everything.returncode == 0, everything.stderr
        report = proc.memd("doctor", "--json")
        assert report.returncode == 0, report.stdout
        levels = {c["name"]: c["level"] for c in json.loads(report.stdout)["checks"]}
        assert "fail" not in levels.values(), levels
    finally:
        proc.stop()
        remove_socket_dir(sock)
