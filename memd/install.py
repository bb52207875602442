"""`memd install` / `memd uninstall`: Claude Code hooks in settings.json, and the user service.

Hooks. memd's entries in ``~/.claude/settings.json`` (or ``$CLAUDE_CONFIG_DIR/settings.json``)
are recognised by their command's first word having the basename ``memd-hook``. Everything
else in the file (other keys, other tools' hooks, matcher groups) is kept as it is. A change
is written atomically after a timestamped backup; no change means no write and no backup.

Service. The systemd user unit and the launchd agent are rendered from the templates below,
which are byte-identical to ``systemd/memd.service`` and ``launchd/dev.memd.plist`` in the
repository (a test holds them together; they live here too so that a wheel install has them).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import plistlib
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memd.errors import UserError
from memd.settings import Settings

HOOK_NAME = "memd-hook"
HOOK_EVENTS: dict[str, tuple[str, int]] = {
    # Claude Code event: (memd-hook argument, timeout in seconds). SessionEnd hooks share a
    # 1.5 s budget, so `memd-hook session-end` only notifies the daemon and returns.
    "SessionStart": ("session-start", 10),
    "UserPromptSubmit": ("user-prompt-submit", 5),
    "Stop": ("stop", 5),
    "SessionEnd": ("session-end", 2),
}
UNIT_NAME = "memd.service"
LABEL = "dev.memd"
SKIPPED_VARS = {
    "MEMD_ANTHROPIC_API_KEY",  # a secret: keep it in the config file (mode 0600), not in a unit
    "MEMD_DISABLE",  # a per-session opt-out for hooks, not a daemon setting
}
PASSED_VARS = ("XDG_DATA_HOME", "XDG_CONFIG_HOME")
"""Besides MEMD_*: they decide the default paths, so the daemon must see the CLI's values."""
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


# ---------------------------------------------------------------- locations


def claude_dir() -> Path:
    raw = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(raw).expanduser() if raw else Path.home() / ".claude"


def claude_settings_path() -> Path:
    return claude_dir() / "settings.json"


def unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / UNIT_NAME


def plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def find_executable(name: str) -> Path:
    """``name`` next to the running interpreter (this venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which(name)
    if found:
        return Path(found).absolute()
    raise UserError(
        f"cannot find `{name}` next to {sys.executable} or on PATH; reinstall memd "
        f"({sys.executable} -m pip install --force-reinstall memd)"
    )


def service_system(system: str | None = None) -> str:
    """'systemd' on Linux, 'launchd' on macOS."""
    name = system or os.uname().sysname
    if name == "Linux":
        return "systemd"
    if name == "Darwin":
        return "launchd"
    raise UserError(f"no service support on {name}: run `memd serve` yourself")


# ---------------------------------------------------------------- settings.json


@dataclass
class SettingsChange:
    """What install/uninstall did (or, with dry_run, would do) to settings.json."""

    path: Path
    changed: bool
    message: str
    diff: str = ""
    backup: Path | None = None


def read_claude_settings(path: Path) -> tuple[dict[str, Any], str | None]:
    """The parsed file and its text (None when the file does not exist). Refuses bad JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text; memd changed nothing") from exc
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); "
            "memd changed nothing - fix the file, then run the command again"
        ) from exc
    if not isinstance(data, dict):
        raise UserError(f"{path}: the top level is not a JSON object; memd changed nothing")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise UserError(f'{path}: "hooks" is not a JSON object; memd changed nothing')
    for event in HOOK_EVENTS:
        groups = (hooks or {}).get(event)
        if groups is not None and not isinstance(groups, list):
            raise UserError(f'{path}: "hooks.{event}" is not a list; memd changed nothing')
    return data, text


def hook_argv(entry: Any) -> list[str] | None:
    """The command of a hook entry split into words, or None when it is not a command."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    try:
        return shlex.split(entry["command"])
    except ValueError:
        return entry["command"].split()


def is_memd_entry(entry: Any) -> bool:
    argv = hook_argv(entry)
    return bool(argv) and os.path.basename(argv[0]) == HOOK_NAME  # type: ignore[index]


def hook_entry(hook_path: Path, event: str) -> dict[str, Any]:
    arg, timeout = HOOK_EVENTS[event]
    return {
        "type": "command",
        "command": f"{shlex.quote(str(hook_path))} {arg}",
        "timeout": timeout,
    }


def without_memd(groups: list[Any], replacement: dict[str, Any] | None = None) -> list[Any]:
    """Groups minus memd's entries. The first memd entry becomes ``replacement`` if given.

    A matcher group that held only memd entries is dropped; every other group is kept as is.
    """
    kept: list[Any] = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        entries: list[Any] = []
        touched = False
        for entry in group["hooks"]:
            if not is_memd_entry(entry):
                entries.append(entry)
                continue
            touched = True
            if replacement is not None:
                entries.append(replacement)
                replacement = None
        if touched and not entries:
            continue
        kept.append({**group, "hooks": entries} if touched else group)
    return kept


def merge_hooks(data: dict[str, Any], hook_path: Path) -> dict[str, Any]:
    """``data`` with exactly one memd entry per event (updated in place when one exists)."""
    new = copy.deepcopy(data)
    hooks = new.setdefault("hooks", {})
    for event in HOOK_EVENTS:
        wanted = hook_entry(hook_path, event)
        groups = hooks.get(event) or []
        placed = without_memd(groups) != groups
        merged = without_memd(groups, replacement=wanted)
        if not placed:
            merged.append({"hooks": [wanted]})
        hooks[event] = merged
    return new


def remove_hooks(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without memd's entries; events and ``hooks`` emptied by that are dropped."""
    new = copy.deepcopy(data)
    hooks = new.get("hooks")
    if not isinstance(hooks, dict):
        return new
    for event, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept = without_memd(groups)
        if kept == groups:
            continue
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks and hooks != data.get("hooks"):
        del new["hooks"]
    return new


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str, *, default_mode: int = 0o600) -> None:
    """Temp file in the same directory, fsync, keep the old mode, os.replace, fsync the dir.

    A symlinked file (dotfile managers) is written through: the link stays a link.
    """
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = default_mode
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def backup_file(path: Path) -> Path:
    """Copy ``path`` to ``<name>.memd-backup-YYYYmmddTHHMMSS`` (mode 0600) and return it."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    dest = path.with_name(f"{path.name}.memd-backup-{stamp}")
    n = 1
    while dest.exists():
        dest = path.with_name(f"{path.name}.memd-backup-{stamp}-{n}")
        n += 1
    shutil.copyfile(path, dest)
    os.chmod(dest, 0o600)
    return dest


def apply_settings(
    path: Path, new: dict[str, Any], old: dict[str, Any], old_text: str | None, *, dry_run: bool
) -> tuple[str, Path | None]:
    """Write ``new`` (after a backup) unless dry_run. Returns (diff, backup)."""
    new_text = render_json(new)
    diff = "".join(
        difflib.unified_diff(
            (old_text or "").splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            fromfile=str(path),
            tofile=f"{path} (new)",
        )
    )
    if dry_run:
        return diff, None
    backup = backup_file(path) if old_text is not None else None
    write_atomic(path, new_text)
    return diff, backup


def install_hooks(
    *, dry_run: bool = False, hook_path: Path | None = None, path: Path | None = None
) -> SettingsChange:
    path = path or claude_settings_path()
    data, text = read_claude_settings(path)
    hook = hook_path or find_executable(HOOK_NAME)
    new = merge_hooks(data, hook)
    if new == data and text is not None:
        return SettingsChange(path, False, f"hooks already installed in {path}")
    diff, backup = apply_settings(path, new, data, text, dry_run=dry_run)
    verb = "would install" if dry_run else "installed"
    events = ", ".join(HOOK_EVENTS)
    msg = f"{verb} hooks ({events}) -> {hook} in {path}"
    if backup:
        msg += f" (backup: {backup.name})"
    return SettingsChange(path, True, msg, diff, backup)


def uninstall_hooks(*, dry_run: bool = False, path: Path | None = None) -> SettingsChange:
    path = path or claude_settings_path()
    data, text = read_claude_settings(path)
    new = remove_hooks(data)
    if new == data:
        return SettingsChange(path, False, f"no memd hooks in {path}")
    diff, backup = apply_settings(path, new, data, text, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    msg = f"{verb} memd hooks from {path}"
    if backup:
        msg += f" (backup: {backup.name})"
    return SettingsChange(path, True, msg, diff, backup)


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


def render_unit(memd_path: Path, env: Mapping[str, str], writable: list[Path]) -> str:
    exec_path = systemd_escape(str(memd_path)).replace("$", "$$")
    text = SYSTEMD_TEMPLATE.replace(EXEC_LINE, f"ExecStart={exec_path} serve")
    env_lines = "".join(f"Environment={systemd_escape(f'{k}={v}')}\n" for k, v in env.items())
    text = text.replace(ENV_MARKER + "\n", ENV_MARKER + "\n" + env_lines)
    rw = " ".join(systemd_escape(f"-{p}") for p in writable)
    text = text.replace(RW_LINE, f"ReadWritePaths={rw}")
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
            write_atomic(path, text, default_mode=0o644)
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
        # ProtectHome=read-only: the daemon cannot create its own data directory.
        settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "systemd":
        return install_systemd(settings, memd, env, dry_run=dry_run)
    return install_launchd(memd, env, dry_run=dry_run)


def install_systemd(
    settings: Settings, memd: Path, env: Mapping[str, str], *, dry_run: bool
) -> ServiceChange:
    change = ServiceChange(unit_path(), False)
    existed = write_service_file(
        change, render_unit(memd, env, writable_paths(settings)), dry_run=dry_run
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


def purge_home(settings: Settings) -> Path:
    """Delete $MEMD_HOME (memories, journal, state). Refuses obviously wrong directories."""
    home = settings.home.expanduser().resolve()
    user_home = Path.home().resolve()
    if home == Path("/") or home == user_home or user_home.is_relative_to(home):
        raise UserError(f"refusing to delete {home}: it is not a memd data directory")
    if home.exists():
        shutil.rmtree(home)
    return home
