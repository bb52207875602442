"""The user service: a systemd user unit (Linux) or a launchd agent (macOS) running `memd serve`.

Both are rendered from templates that are byte-identical to ``systemd/memd.service`` and
(as a document) to ``launchd/dev.memd.plist`` in the repository; a test holds them together.
They live here too so that a wheel install has them.
"""

from __future__ import annotations

import difflib
import os
import plistlib
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memd.atomic import write_atomic
from memd.errors import UserError
from memd.settings import Settings
from memd.setup.install import claude_dir, find_executable

UNIT_NAME = "memd.service"
LABEL = "dev.memd"
SKIPPED_VARS = {
    "MEMD_ANTHROPIC_API_KEY",  # a secret: keep it in the config file (mode 0600), not in a unit
    "MEMD_DISABLE",  # a per-session opt-out for hooks, not a daemon setting
}
PASSED_VARS = ("XDG_DATA_HOME", "XDG_CONFIG_HOME")
"""Besides MEMD_*: they decide the default paths, so the daemon must see the CLI's values."""
SHARED_TMP = (Path("/tmp"), Path("/var/tmp"))
PATH_VARS = {"MEMD_HOME", "MEMD_TRANSCRIPTS_DIR", "MEMD_SOCKET", "MEMD_CONFIG", *PASSED_VARS}

SYSTEMD_TEMPLATE = """\
# memd: long-term memory for Claude Code, as a systemd user service.
#
# `memd install --service` renders this file into ~/.config/systemd/user/memd.service
# with the absolute path of this installation's `memd` and the MEMD_* variables set
# at install time, then runs:
#   systemctl --user daemon-reload && systemctl --user enable --now memd.service
# To use it by hand, copy it there and replace %h/.local/bin/memd if memd lives elsewhere.
# Logs: journalctl --user -u memd.service

[Unit]
Description=memd - long-term memory for Claude Code
# Backoff: at most 5 starts in 5 minutes, then systemd gives up until
# `systemctl --user reset-failed memd.service` or the next login.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=simple
ExecStart=%h/.local/bin/memd serve
Restart=on-failure
RestartSec=2
# Exit 4: the store was written by a newer memd; restarting cannot help.
RestartPreventExitStatus=4
TimeoutStopSec=20
# MEMD_* environment (memd install writes one Environment= line per variable set):

# Hardening. The home directory is read-only (so ~/.claude and its transcripts stay
# readable); only memd's data and config directories are writable. A leading "-"
# means "skip if missing". If the service fails with status=226/NAMESPACE (no user
# namespaces on this kernel), delete the lines from PrivateTmp to ReadWritePaths.
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
ProtectHome=read-only
ReadWritePaths=-%h/.local/share/memd -%h/.config/memd

[Install]
WantedBy=default.target
"""
EXEC_LINE = "ExecStart=%h/.local/bin/memd serve"
ENV_MARKER = "# MEMD_* environment (memd install writes one Environment= line per variable set):"
RW_LINE = "ReadWritePaths=-%h/.local/share/memd -%h/.config/memd"


def unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / UNIT_NAME


def plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def service_system(system: str | None = None) -> str:
    """'systemd' on Linux, 'launchd' on macOS."""
    name = system or os.uname().sysname
    if name == "Linux":
        return "systemd"
    if name == "Darwin":
        return "launchd"
    raise UserError(f"no service support on {name}: run `memd serve` yourself")


# ---------------------------------------------------------------- service files


def service_environment(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """MEMD_* (minus secrets and session flags) and XDG dirs, as the daemon must see them."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key in sorted(env):
        if not (key.startswith("MEMD_") or key in PASSED_VARS) or key in SKIPPED_VARS:
            continue
        value = env[key]
        if "\n" in value or "\0" in value:
            continue
        if key in PATH_VARS and value:
            value = os.path.abspath(os.path.expanduser(value))
        out[key] = value
    if settings.extractor == "claude-cli" and env.get("PATH"):
        out["PATH"] = env["PATH"]  # `claude` is a node script: it needs node on PATH
    return out


def writable_paths(settings: Settings) -> list[Path]:
    """Directories the service may write; the rest of the home directory is read-only."""
    home = settings.home.expanduser().absolute()
    paths = [home, settings.config_path.expanduser().absolute().parent]
    sock_dir = settings.socket_path.expanduser().absolute().parent
    if not sock_dir.is_relative_to(home):
        paths.append(sock_dir)
    if settings.extractor == "claude-cli":
        # `claude -p` writes its own state (~/.claude, ~/.claude.json).
        paths += [claude_dir().absolute(), Path.home() / ".claude.json"]
    unique: list[Path] = []
    for p in paths:
        if p not in unique:
            unique.append(p)
    return unique


def systemd_escape(value: str) -> str:
    """Escape ``%`` specifiers; quote (C-style) when the value has spaces or quotes."""
    value = value.replace("%", "%%")
    if any(c in value for c in " \t\"'\\"):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def uses_shared_tmp(settings: Settings) -> bool:
    """True when the data dir or socket is under /tmp: PrivateTmp would hide it from hooks."""
    places = [settings.home, settings.socket_path.parent]
    return any(p.expanduser().absolute().is_relative_to(t) for p in places for t in SHARED_TMP)


def render_unit(
    memd_path: Path, env: Mapping[str, str], writable: list[Path], *, private_tmp: bool = True
) -> str:
    exec_path = systemd_escape(str(memd_path)).replace("$", "$$")
    text = SYSTEMD_TEMPLATE.replace(EXEC_LINE, f"ExecStart={exec_path} serve")
    env_lines = "".join(f"Environment={systemd_escape(f'{k}={v}')}\n" for k, v in env.items())
    text = text.replace(ENV_MARKER + "\n", ENV_MARKER + "\n" + env_lines)
    rw = " ".join(systemd_escape(f"-{p}") for p in writable)
    text = text.replace(RW_LINE, f"ReadWritePaths={rw}")
    if not private_tmp:
        text = text.replace(
            "PrivateTmp=yes\n", "# PrivateTmp=yes is off: memd's files are under /tmp.\n"
        )
    header = "# Rendered by `memd install`; it is replaced on the next install.\n"
    return header + text


def plist_document(memd_path: Path, home: Path, env: Mapping[str, str]) -> dict[str, Any]:
    logs = home / "Library" / "Logs" / "memd"
    return {
        "Label": LABEL,
        "ProgramArguments": [str(memd_path), "serve"],
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "WorkingDirectory": str(home),
        "StandardOutPath": str(logs / "memd.out.log"),
        "StandardErrorPath": str(logs / "memd.err.log"),
        "EnvironmentVariables": dict(env),
    }


def render_plist(memd_path: Path, home: Path, env: Mapping[str, str]) -> str:
    return plistlib.dumps(plist_document(memd_path, home, env), sort_keys=False).decode()


def installed_program(kind: str) -> Path | None:
    """The executable the installed unit or agent runs, or None when it cannot be read."""
    try:
        if kind == "launchd":
            args = plistlib.loads(plist_path().read_bytes()).get("ProgramArguments") or []
            return Path(args[0]) if args else None
        for line in unit_path().read_text(encoding="utf-8").splitlines():
            if line.startswith("ExecStart="):
                argv = shlex.split(line.removeprefix("ExecStart=").replace("$$", "$"))
                return Path(argv[0].replace("%%", "%")) if argv else None
    except (OSError, ValueError, plistlib.InvalidFileException):
        return None
    return None


# ---------------------------------------------------------------- service install


@dataclass
class ServiceChange:
    """What the service step did. ``todo`` holds commands the user must run."""

    path: Path
    changed: bool
    messages: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)
    diff: str = ""


def run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def user_bus_works() -> bool:
    if not shutil.which("systemctl"):
        return False
    try:
        return run(["systemctl", "--user", "show-environment"], timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def gui_domain() -> str:
    return f"gui/{os.getuid()}"


def run_steps(change: ServiceChange, steps: list[list[str]]) -> None:
    for argv in steps:
        shown = shlex.join(argv)
        proc = run(argv)
        change.ran.append(shown)
        if proc.returncode != 0:
            err = (proc.stderr or proc.stdout).strip().splitlines()
            raise UserError(f"`{shown}` failed: {err[-1] if err else f'exit {proc.returncode}'}")


def write_service_file(change: ServiceChange, text: str, *, dry_run: bool) -> bool:
    """Write the rendered file if it differs; returns whether a previous version existed."""
    path = change.path
    try:
        old: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    change.changed = old != text
    if change.changed:
        change.diff = "".join(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=str(path),
                tofile=f"{path} (new)",
            )
        )
        if not dry_run:
            write_atomic(path, text, mode=0o644, through_symlink=True)
    verb = ("would write" if dry_run else "wrote") if change.changed else "unchanged:"
    change.messages.append(f"{verb} {path}")
    return old is not None


def install_service(
    settings: Settings,
    *,
    dry_run: bool = False,
    memd_path: Path | None = None,
    system: str | None = None,
) -> ServiceChange:
    kind = service_system(system)
    memd = memd_path or find_executable("memd")
    env = service_environment(settings)
    if not dry_run:
        # ProtectHome/ProtectSystem: the daemon cannot create its own directories.
        settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        settings.socket_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "systemd":
        return install_systemd(settings, memd, env, dry_run=dry_run)
    return install_launchd(memd, env, dry_run=dry_run)


def install_systemd(
    settings: Settings, memd: Path, env: Mapping[str, str], *, dry_run: bool
) -> ServiceChange:
    change = ServiceChange(unit_path(), False)
    existed = write_service_file(
        change,
        render_unit(memd, env, writable_paths(settings), private_tmp=not uses_shared_tmp(settings)),
        dry_run=dry_run,
    )
    steps = [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", UNIT_NAME],
    ]
    if existed and change.changed:
        steps.append(["systemctl", "--user", "restart", UNIT_NAME])
    if not user_bus_works():
        change.todo = [shlex.join(s) for s in steps]
        return change
    if not change.changed:
        enabled = run(["systemctl", "--user", "is-enabled", UNIT_NAME], 10).stdout.strip()
        active = run(["systemctl", "--user", "is-active", UNIT_NAME], 10).stdout.strip()
        if enabled == "enabled" and active == "active":
            change.messages.append("service already enabled and running")
            return change
    if dry_run:
        change.messages += [f"would run: {shlex.join(s)}" for s in steps]
        return change
    run_steps(change, steps)
    change.messages.append("service enabled and started")
    return change


def install_launchd(memd: Path, env: Mapping[str, str], *, dry_run: bool) -> ServiceChange:
    home = Path.home()
    change = ServiceChange(plist_path(), False)
    write_service_file(change, render_plist(memd, home, env), dry_run=dry_run)
    if not dry_run:
        (home / "Library" / "Logs" / "memd").mkdir(parents=True, exist_ok=True)
    target = f"{gui_domain()}/{LABEL}"
    bootstrap = ["launchctl", "bootstrap", gui_domain(), str(change.path)]
    if not shutil.which("launchctl"):
        change.todo = [shlex.join(bootstrap)]
        return change
    loaded = run(["launchctl", "print", target], 10).returncode == 0
    if loaded and not change.changed:
        change.messages.append("agent already loaded")
        return change
    steps = ([["launchctl", "bootout", target]] if loaded else []) + [bootstrap]
    if dry_run:
        change.messages += [f"would run: {shlex.join(s)}" for s in steps]
        return change
    run_steps(change, steps)
    change.messages.append("agent loaded")
    return change


def uninstall_service(*, dry_run: bool = False, system: str | None = None) -> ServiceChange:
    kind = service_system(system)
    if kind == "systemd":
        change = ServiceChange(unit_path(), False)
        steps = [["systemctl", "--user", "disable", "--now", UNIT_NAME]]
        after = [["systemctl", "--user", "daemon-reload"]]
        links = [change.path.parent / "default.target.wants" / UNIT_NAME]
        can_run = user_bus_works()
    else:
        change = ServiceChange(plist_path(), False)
        steps = [["launchctl", "bootout", f"{gui_domain()}/{LABEL}"]]
        after = []
        links = []
        can_run = shutil.which("launchctl") is not None
    present = change.path.exists() or any(p.is_symlink() for p in links)
    if not present:
        change.messages.append(f"no service file at {change.path}")
        return change
    change.changed = True
    if dry_run:
        change.messages.append(f"would remove {change.path}")
        change.messages += [f"would run: {shlex.join(s)}" for s in steps + after]
        return change
    if can_run:
        for argv in steps:  # stopping may fail when it is not loaded: that is fine
            run(argv)
            change.ran.append(shlex.join(argv))
    elif kind == "systemd" and shutil.which("systemctl"):
        change.todo = ["systemctl --user stop memd.service", "systemctl --user daemon-reload"]
    for path in [change.path, *links]:
        with suppress(FileNotFoundError):
            path.unlink()
    change.messages.append(f"removed {change.path}")
    if can_run and after:
        run_steps(change, after)
    return change
