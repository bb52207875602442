"""`memd install` / `memd uninstall` against a temporary HOME with a realistic settings.json.

systemctl and launchctl are replaced by small recording scripts placed first on PATH: the real
ones would enable a service in the real user session (and this container has no user bus).
"""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path

from memd.cli import main
from memd.cli.service import register
from memd.errors import UserError
from memd.settings import load_settings
from memd.setup import install
from memd.setup import service as user_service

REALISTIC = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "model": "opus",
    "env": {"DISABLE_TELEMETRY": "1", "FOO": "bär"},
    "permissions": {
        "allow": ["Bash(git status:*)", "Read(~/.zshrc)"],
        "deny": ["Read(./.env)"],
        "defaultMode": "acceptEdits",
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": "python3 ~/.claude/hooks/guard.py",
                        "timeout": 30,
                    }
                ],
            }
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "npx -y other-memory-tool prompt"}]}
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
        ],
        "Notification": [
            {"matcher": "", "hooks": [{"type": "command", "command": "notify-send Claude"}]}
        ],
    },
    "enabledPlugins": {"formatter@market": True},
    "cleanupPeriodDays": 30,
}

FAKE_SYSTEMCTL = r"""#!/bin/sh
echo "systemctl $*" >> "$FAKE_STATE/log"
case "$2" in
  show-environment) [ -e "$FAKE_STATE/bus" ] || { echo "Failed to connect to bus" >&2; exit 1; } ;;
  is-enabled) if [ -e "$FAKE_STATE/enabled" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if [ -e "$FAKE_STATE/active" ]; then echo active; else echo inactive; exit 3; fi ;;
  enable) touch "$FAKE_STATE/enabled" "$FAKE_STATE/active" ;;
  disable) rm -f "$FAKE_STATE/enabled" "$FAKE_STATE/active" ;;
esac
exit 0
"""

FAKE_LAUNCHCTL = r"""#!/bin/sh
echo "launchctl $*" >> "$FAKE_STATE/log"
case "$1" in
  print) [ -e "$FAKE_STATE/loaded" ] || exit 113 ;;
  bootstrap) touch "$FAKE_STATE/loaded" ;;
  bootout) rm -f "$FAKE_STATE/loaded" ;;
esac
exit 0
"""


@pytest.fixture(autouse=True)
def fake_service_managers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Recording systemctl/launchctl first on PATH; returns the state dir (``bus`` = bus up)."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    for name, text in (("systemctl", FAKE_SYSTEMCTL), ("launchctl", FAKE_LAUNCHCTL)):
        script = bindir / name
        script.write_text(text)
        script.chmod(0o755)
    state = tmp_path / "fakestate"
    state.mkdir()
    monkeypatch.setenv("FAKE_STATE", str(state))
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return state


def calls(state: Path) -> list[str]:
    log = state / "log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def settings_file() -> Path:
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    # Four-space indentation and raw Unicode, unlike what memd writes.
    path.write_text(json.dumps(REALISTIC, indent=4, ensure_ascii=False))
    path.chmod(0o644)
    return path


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".memd-backup-*"))


def memd_entries(data: dict, event: str) -> list[dict]:
    return [
        entry
        for group in data["hooks"].get(event, [])
        for entry in group["hooks"]
        if install.is_memd_entry(entry)
    ]


def run_cli(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=input)
    return result.exit_code, result.output


# ---------------------------------------------------------------- hooks


def fast_command(arg: str, socket: Path | str | None = None) -> str:
    """What `memd install` writes: this venv's python, isolated, running memd/hookrun.py."""
    hook_file = os.path.realpath(install.hook_command_argv("x")[3])
    assert hook_file.endswith("/memd/hookrun.py") and os.path.isfile(hook_file)
    sock = str(socket or load_settings().socket_path)
    return shlex.join([sys.executable, "-I", "-S", hook_file, arg, "--socket", sock])


def test_install_merges_and_preserves_other_tools(settings_file: Path) -> None:
    change = install.install_hooks()
    assert change.changed
    data = json.loads(settings_file.read_text())
    for event, (arg, timeout) in install.HOOK_EVENTS.items():
        entries = memd_entries(data, event)
        assert entries == [{"type": "command", "command": fast_command(arg), "timeout": timeout}], (
            event
        )
    # Everything that is not memd's is exactly as it was, in the same order.
    assert install.remove_hooks(data) == REALISTIC
    assert data["hooks"]["UserPromptSubmit"][0] == REALISTIC["hooks"]["UserPromptSubmit"][0]
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup"
    assert list(data) == list(REALISTIC)
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o644  # mode kept


def test_install_twice_is_idempotent(settings_file: Path) -> None:
    first = install.install_hooks()
    after_first = settings_file.read_bytes()
    assert len(backups(settings_file)) == 1
    second = install.install_hooks()
    assert not second.changed
    assert "already installed" in second.message
    assert settings_file.read_bytes() == after_first
    assert len(backups(settings_file)) == 1
    assert first.backup is not None and second.backup is None
    code, out = run_cli("install", "--hooks")
    assert code == 0 and "already installed" in out
    assert settings_file.read_bytes() == after_first


def test_backup_holds_the_original_bytes(settings_file: Path) -> None:
    original = settings_file.read_bytes()
    change = install.install_hooks()
    assert change.backup is not None
    assert change.backup.read_bytes() == original
    assert stat.S_IMODE(change.backup.stat().st_mode) == 0o600
    assert change.backup.name.startswith("settings.json.memd-backup-2")


def test_invalid_json_is_refused_and_nothing_changes(settings_file: Path) -> None:
    broken = '{\n  "model": "opus",\n  "hooks": {},\n}\n'
    settings_file.write_text(broken)
    with pytest.raises(UserError) as err:
        install.install_hooks()
    message = str(err.value)
    assert str(settings_file) in message
    assert "line 4, column 1" in message
    assert "changed nothing" in message
    code, out = run_cli("install", "--hooks")
    assert code == 1
    assert "invalid JSON at line 4" in out
    assert len(out.strip().splitlines()) == 1
    code, out = run_cli("uninstall", "--hooks")
    assert code == 1
    assert settings_file.read_text() == broken
    assert backups(settings_file) == []


def test_non_object_hooks_are_refused(settings_file: Path) -> None:
    settings_file.write_text('{"hooks": {"Stop": {"command": "x"}}}')
    with pytest.raises(UserError, match=r"hooks.Stop.*not a list"):
        install.install_hooks()


def test_uninstall_restores_the_original(settings_file: Path) -> None:
    install.install_hooks()
    change = install.uninstall_hooks()
    assert change.changed
    assert json.loads(settings_file.read_text()) == REALISTIC
    assert len(backups(settings_file)) == 2
    again = install.uninstall_hooks()
    assert not again.changed
    assert len(backups(settings_file)) == 2


def test_install_and_uninstall_without_a_settings_file() -> None:
    path = Path.home() / ".claude" / "settings.json"
    install.install_hooks()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a new file is private
    assert backups(path) == []  # nothing to back up
    assert set(json.loads(path.read_text())["hooks"]) == set(install.HOOK_EVENTS)
    install.uninstall_hooks()
    assert json.loads(path.read_text()) == {}


def test_dry_run_writes_nothing(settings_file: Path) -> None:
    before = settings_file.read_bytes()
    code, out = run_cli("install", "--dry-run")
    assert code == 0, out
    assert "would install hooks" in out
    assert '+            "command": ' in out or '"command":' in out  # the diff
    assert "would write" in out and "memd.service" in out
    assert settings_file.read_bytes() == before
    assert backups(settings_file) == []
    assert not user_service.unit_path().exists()
    install.install_hooks()
    installed = settings_file.read_bytes()
    code, out = run_cli("uninstall", "--dry-run")
    assert code == 0 and "would remove memd hooks" in out
    assert settings_file.read_bytes() == installed


def test_reinstall_updates_a_stale_entry_instead_of_adding_one(settings_file: Path) -> None:
    data = json.loads(settings_file.read_text())
    # An old install from another venv, sharing a group with another tool's hook.
    data["hooks"]["Stop"] = [
        {
            "hooks": [
                {"type": "command", "command": "/old/venv/bin/memd-hook stop", "timeout": 60},
                {"type": "command", "command": "say done"},
            ]
        }
    ]
    data["hooks"]["SessionEnd"] = [
        {"hooks": [{"type": "command", "command": "/old/venv/bin/memd-hook session-end"}]},
        {"hooks": [{"type": "command", "command": "memd-hook session-end"}]},  # a duplicate
    ]
    settings_file.write_text(json.dumps(data))
    install.install_hooks()
    new = json.loads(settings_file.read_text())
    stop = new["hooks"]["Stop"]
    assert len(stop) == 1
    assert stop[0]["hooks"][0]["command"] == fast_command("stop")
    assert stop[0]["hooks"][0]["timeout"] == 5
    assert stop[0]["hooks"][1] == {"type": "command", "command": "say done"}
    assert len(memd_entries(new, "SessionEnd")) == 1
    assert len(new["hooks"]["SessionEnd"]) == 1
    # Uninstall keeps the other tool's entry in the shared group.
    install.uninstall_hooks()
    final = json.loads(settings_file.read_text())
    assert final["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "say done"}]}]
    assert "SessionEnd" not in final["hooks"]


def test_hook_path_with_spaces_is_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sock = tmp_path / "my home" / "memd.sock"
    monkeypatch.setenv("MEMD_SOCKET", str(sock))
    hook = tmp_path / "my venv" / "bin" / "memd-hook"
    change = install.install_hooks(hook_path=hook)
    data = json.loads(change.path.read_text())
    (entry,) = memd_entries(data, "UserPromptSubmit")
    assert shlex.split(entry["command"]) == [
        str(hook),
        "user-prompt-submit",
        "--socket",
        str(sock),
    ]
    assert install.is_memd_entry(entry)
    # The fast form (and the file earlier versions ran), with spaces in the interpreter's, the
    # file's and the socket's paths.
    python = tmp_path / "my venv" / "bin" / "python"
    for name in ("hookrun.py", "hook.py"):
        source = tmp_path / "site packages" / "memd" / name
        entry = {
            "type": "command",
            "command": shlex.join([str(python), "-I", "-S", str(source), "stop"]),
        }
        assert install.is_memd_entry(entry), name
        assert install.hook_words(install.hook_argv(entry)) == ["stop"]
    for other in (
        "python3 ~/.claude/hooks/guard.py",
        "python -I -S /x/notmemd/hook.py stop",
        "python -I -S /x/notmemd/hookrun.py stop",
        "npx -y other-memory-tool prompt",
        "memd-hook-other stop",
    ):
        assert not install.is_memd_entry({"type": "command", "command": other}), other


def test_installed_command_dials_the_daemon_configured_only_in_the_config_file(
    tmp_path: Path,
) -> None:
    """Defect: the hook read only MEMD_SOCKET/MEMD_HOME, so a daemon whose home and socket come
    from memd.toml got nothing. Here the config file is the only thing that says where."""
    sock = short_socket_path()
    env = daemon_env(tmp_path / "cfg", sock)
    for name in ("MEMD_SOCKET", "MEMD_HOME", "MEMD_CONFIG"):
        env.pop(name)  # the default config location, then only what the file says
    config = Path(env["XDG_CONFIG_HOME"]) / "memd" / "memd.toml"
    config.parent.mkdir(parents=True)
    data_home = tmp_path / "cfg" / "data home"
    config.write_text(f"[memd]\nhome = {json.dumps(str(data_home))}\nsocket = {json.dumps(sock)}\n")
    repo = tmp_path / "cfg" / "shop"
    (repo / ".git").mkdir(parents=True)
    proc = DaemonProcess(env, tmp_path / "serve.log", socket=sock)
    try:
        proc.start()
        added = proc.memd("add", "Invoices are stored in PostgreSQL 16.", cwd=str(repo))
        assert added.returncode == 0, added.stderr
        installed = proc.memd("install", "--hooks")
        assert installed.returncode == 0, installed.stderr
        settings = json.loads((Path(env["HOME"]) / ".claude" / "settings.json").read_text())
        (entry,) = [e for g in settings["hooks"]["UserPromptSubmit"] for e in g["hooks"]]
        assert " -I -S " in entry["command"] and "--socket" in entry["command"]
        payload = json.dumps(
            {
                "session_id": "s1",
                "transcript_path": "/nonexistent/t.jsonl",
                "cwd": str(repo),
                "hook_event_name": "UserPromptSubmit",
                "prompt": "Which database holds the invoices?",
            }
        )
        # As Claude Code runs it: through the shell, in an environment without MEMD_*.
        out = subprocess.run(
            entry["command"],
            shell=True,
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        assert (out.returncode, out.stderr) == (0, "")
        assert "PostgreSQL 16" in out.stdout
        # `memd-hook` called by hand, without --socket, reads the config file too.
        by_hand = proc.hook("user-prompt-submit", payload.replace("s1", "s2"))
        assert "PostgreSQL 16" in by_hand.stdout
        assert (data_home / "store").is_dir()
        doctor = proc.memd("doctor", "--json")
        hooks = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "hooks")
        assert hooks["level"] == "ok", hooks
    finally:
        if proc.proc is not None:
            proc.stop()
        remove_socket_dir(sock)


def test_claude_config_dir_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "claude-cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(custom))
    install.install_hooks()
    assert (custom / "settings.json").is_file()
    assert not (Path.home() / ".claude" / "settings.json").exists()


def test_symlinked_settings_stay_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text(json.dumps(REALISTIC))
    link = Path.home() / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    install.install_hooks()
    assert link.is_symlink()
    assert memd_entries(json.loads(real.read_text()), "Stop")


def test_hook_lookup_prefers_the_venv() -> None:
    assert install.find_executable("memd-hook") == Path(sys.executable).parent / "memd-hook"
    with pytest.raises(UserError, match="cannot find"):
        install.find_executable("memd-hook-that-does-not-exist")


# ---------------------------------------------------------------- service


def test_systemd_install_enables_when_the_user_bus_works(fake_service_managers: Path) -> None:
    state = fake_service_managers
    (state / "bus").touch()
    settings = load_settings()
    change = user_service.install_service(settings, system="Linux")
    unit = user_service.unit_path()
    assert unit == Path.home() / ".config" / "systemd" / "user" / "memd.service"
    text = unit.read_text()
    memd = Path(sys.executable).parent / "memd"
    assert f"ExecStart={memd} serve" in text
    assert f"Environment=MEMD_HOME={settings.home}" in text
    assert f"Environment=MEMD_TRANSCRIPTS_DIR={settings.transcripts_dir}" in text
    assert f"ReadWritePaths=-{settings.home} " in text
    assert settings.home.is_dir()  # created: the unit's home is read-only
    assert change.ran == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memd.service",
    ]
    assert change.todo == []
    # Second run: nothing to do.
    before = calls(state)
    again = user_service.install_service(settings, system="Linux")
    assert not again.changed and again.ran == []
    assert "already enabled" in " ".join(again.messages)
    assert not any("enable" in c and "is-enabled" not in c for c in calls(state)[len(before) :])
    # Uninstall: stopped, disabled, removed, reloaded.
    gone = user_service.uninstall_service(system="Linux")
    assert gone.changed and not unit.exists()
    assert gone.ran == [
        "systemctl --user disable --now memd.service",
        "systemctl --user daemon-reload",
    ]
    assert not (state / "enabled").exists()


def test_systemd_install_prints_commands_without_a_bus(
    fake_service_managers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMD_EXTRACTOR", "heuristic")
    monkeypatch.setenv("MEMD_ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("MEMD_DISABLE", "1")
    code, out = run_cli("install", "--service")
    assert code == 0, out
    assert "systemctl --user daemon-reload" in out
    assert "systemctl --user enable --now memd.service" in out
    text = user_service.unit_path().read_text()
    assert "Environment=MEMD_EXTRACTOR=heuristic" in text
    assert "sk-ant-secret" not in text and "MEMD_DISABLE" not in text
    assert calls(fake_service_managers) == ["systemctl --user show-environment"]
    # An unchanged second run writes nothing new and still says what to run.
    mtime = user_service.unit_path().stat().st_mtime_ns
    code, out = run_cli("install", "--service")
    assert code == 0 and "unchanged" in out
    assert user_service.unit_path().stat().st_mtime_ns == mtime
    # Without a bus, uninstall removes the file and the enablement link itself.
    wants = user_service.unit_path().parent / "default.target.wants" / "memd.service"
    wants.parent.mkdir()
    wants.symlink_to(user_service.unit_path())
    code, out = run_cli("uninstall", "--service")
    assert code == 0, out
    assert not user_service.unit_path().exists() and not wants.is_symlink()
    assert "systemctl --user daemon-reload" in out


def test_claude_cli_extractor_gets_path_and_a_writable_claude_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMD_EXTRACTOR", "claude-cli")
    settings = load_settings()
    env = user_service.service_environment(settings)
    assert env["PATH"] == os.environ["PATH"]
    paths = user_service.writable_paths(settings)
    assert Path.home() / ".claude" in paths and Path.home() / ".claude.json" in paths


def test_launchd_install_and_uninstall(fake_service_managers: Path) -> None:
    state = fake_service_managers
    settings = load_settings()
    change = user_service.install_service(settings, system="Darwin")
    path = Path.home() / "Library" / "LaunchAgents" / "dev.memd.plist"
    assert change.path == path
    doc = plistlib.loads(path.read_bytes())
    assert doc["Label"] == "dev.memd"
    assert doc["ProgramArguments"] == [str(Path(sys.executable).parent / "memd"), "serve"]
    assert doc["EnvironmentVariables"]["MEMD_HOME"] == str(settings.home)
    assert Path(doc["StandardErrorPath"]).parent.is_dir()
    domain = f"gui/{os.getuid()}"
    assert change.ran == [f"launchctl bootstrap {domain} {path}"]
    assert (state / "loaded").exists()
    again = user_service.install_service(settings, system="Darwin")
    assert again.ran == [] and "already loaded" in " ".join(again.messages)
    gone = user_service.uninstall_service(system="Darwin")
    assert gone.ran == [f"launchctl bootout {domain}/dev.memd"]
    assert not path.exists() and not (state / "loaded").exists()


def test_uninstall_purge_asks_and_deletes_memd_home(settings_file: Path) -> None:
    settings = load_settings()
    code, out = run_cli("install")
    assert code == 0, out
    (settings.home / "journal.jsonl").write_text("{}\n")
    code, out = run_cli("uninstall", "--purge", input="n\n")
    assert code == 1  # aborted at the prompt: memories kept
    assert (settings.home / "journal.jsonl").exists()
    code, out = run_cli("uninstall", "--purge", "--yes")
    assert code == 0, out
    assert not settings.home.exists()
    assert json.loads(settings_file.read_text()) == REALISTIC


def test_uninstall_keeps_memories_by_default(settings_file: Path) -> None:
    settings = load_settings()
    run_cli("install")
    (settings.home / "journal.jsonl").write_text("{}\n")
    code, out = run_cli("uninstall")
    assert code == 0, out
    assert "memories kept" in out
    assert (settings.home / "journal.jsonl").exists()


def test_purge_refuses_the_home_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_HOME", str(Path.home()))
    with pytest.raises(UserError, match="refusing"):
        install.purge_home(load_settings())


def test_register_adds_the_three_commands() -> None:
    group = click.Group()
    register(group)
    assert set(group.commands) == {"install", "uninstall", "doctor", "upgrade"}
    assert {"install", "uninstall", "doctor", "upgrade"} <= set(main.commands)


def test_console_script_install_and_uninstall(settings_file: Path) -> None:
    """The way a user runs it: the installed `memd` executable, in a child process."""
    memd = str(Path(sys.executable).parent / "memd")
    first = subprocess.run([memd, "install", "--hooks"], capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert "installed hooks" in first.stdout
    second = subprocess.run(
        [memd, "install", "--hooks"], capture_output=True, text=True, timeout=60
    )
    assert "already installed" in second.stdout
    assert len(backups(settings_file)) == 1
    gone = subprocess.run(
        [memd, "uninstall", "--hooks"], capture_output=True, text=True, timeout=60
    )
    assert gone.returncode == 0, gone.stderr
    assert json.loads(settings_file.read_text()) == REALISTIC
    settings_file.write_text("{,}")
    bad = subprocess.run([memd, "install", "--hooks"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr.startswith("memd: ") and "line 1, column 2" in bad.stderr
    assert settings_file.read_text() == "{,}"


@pytest.mark.skipif(sys.platform != "linux", reason="the CLI picks the service manager by OS")
def test_upgrade_points_hooks_here_and_restarts_the_service(
    settings_file: Path, fake_service_managers: Path
) -> None:
    """After a package upgrade: entries of the old install are replaced, the unit is refreshed
    and the service restarted; nothing is added that the user had not installed."""
    state = fake_service_managers
    (state / "bus").touch()
    settings = load_settings()
    # The previous version: console-script hooks and a unit, both from another venv.
    old = Path("/old/venv/bin")
    install.install_hooks(hook_path=old / "memd-hook")
    user_service.install_service(settings, system="Linux", memd_path=old / "memd")
    before = len(calls(state))
    code, out = run_cli("upgrade", "--wait", "0.5")
    assert "installed hooks" in out and "wrote" in out, out
    assert "systemctl --user restart memd.service" in calls(state)[before:]
    assert code == 1 and "did not answer" in out  # no daemon came up (fake systemctl)
    data = json.loads(settings_file.read_text())
    (entry,) = memd_entries(data, "Stop")
    assert entry["command"] == fast_command("stop")
    assert f"ExecStart={Path(sys.executable).parent / 'memd'} serve" in (
        user_service.unit_path().read_text()
    )
    # A second run: hooks already right, the unit unchanged, the service restarted again.
    code, out = run_cli("upgrade", "--dry-run")
    assert code == 0 and "hooks already installed" in out and "would run: systemctl" in out


def test_upgrade_adds_nothing_that_was_not_installed(settings_file: Path) -> None:
    before = settings_file.read_bytes()
    code, out = run_cli("upgrade", "--wait", "0")
    assert "no memd hooks" in out and "no service installed" in out, out
    assert "no daemon is running" in out and code == 0
    assert settings_file.read_bytes() == before
    assert not user_service.unit_path().exists()
