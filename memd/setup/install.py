"""`memd install --hooks` / `memd uninstall --hooks`: memd's hooks in Claude Code's settings.json.

Each entry runs ``<python> -I -S <path>/memd/hookrun.py EVENT --socket <the daemon's socket>``
(see :func:`memd.hook.command_argv`): no ``site``, no ``.pth`` files, no config file to read,
the hook loaded from its cached bytecode, and the socket the daemon binds however it was
configured. memd's entries in ``~/.claude/settings.json`` (or ``$CLAUDE_CONFIG_DIR/settings.json``)
are recognised by that ``memd/hookrun.py`` word, by ``memd/hook.py`` (the file earlier versions
ran), or by a first word with the basename ``memd-hook`` (the console script, which earlier
versions installed): a re-install replaces those. Everything else in the file
(other keys, other tools' hooks, matcher groups) is kept as it is. A change is written
atomically after a timestamped backup; no change means no write and no backup.
The user service lives in ``memd.service``.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.atomic import write_atomic
from memd.errors import UserError
from memd.hook import command_argv as hook_command_argv
from memd.settings import Settings

HOOK_NAME = "memd-hook"
HOOK_FILES = ("memd/hookrun.py", "memd/hook.py")
"""The files a memd hook command runs: today's, then the one earlier versions installed."""
HOOK_EVENTS: dict[str, tuple[str, int]] = {
    # Claude Code event: (memd-hook argument, timeout in seconds). SessionEnd hooks share a
    # 1.5 s budget, so `memd-hook session-end` only notifies the daemon and returns.
    "SessionStart": ("session-start", 10),
    "UserPromptSubmit": ("user-prompt-submit", 5),
    "Stop": ("stop", 5),
    "SessionEnd": ("session-end", 2),
}

# ---------------------------------------------------------------- locations


def claude_dir() -> Path:
    raw = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(raw).expanduser() if raw else Path.home() / ".claude"


def claude_settings_path() -> Path:
    return claude_dir() / "settings.json"


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
    command: str = entry["command"]
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def hook_words(argv: list[str] | None) -> list[str] | None:
    """The hook's own arguments (``EVENT --socket PATH``...) when ``argv`` runs memd's hook:
    ``memd-hook ...`` or ``<python> [flags] .../memd/hookrun.py ...`` (or ``hook.py``); None for
    any other command.
    """
    if not argv:
        return None
    if os.path.basename(argv[0]) == HOOK_NAME:
        return argv[1:]
    for i, word in enumerate(argv[1:5], start=1):
        if any(word == f or word.endswith("/" + f) for f in HOOK_FILES):
            return argv[i + 1 :]
        if not word.startswith("-"):
            return None
    return None


def is_memd_entry(entry: Any) -> bool:
    return hook_words(hook_argv(entry)) is not None


def hook_entry(
    hook_path: Path | None, event: str, socket: str = "", timeout: float | None = None
) -> dict[str, Any]:
    """memd's entry for ``event``: the fast form, or ``hook_path`` (a ``memd-hook``) when given."""
    arg, limit = HOOK_EVENTS[event]
    argv = hook_command_argv(arg, socket, timeout)
    if hook_path is not None:
        argv = [str(hook_path), *argv[4:]]
    return {"type": "command", "command": shlex.join(argv), "timeout": limit}


def hook_options(settings: Settings) -> tuple[str, float]:
    """What the installed hook command carries: the daemon's socket (absolute) and timeout."""
    return str(Path(settings.socket_path).absolute()), settings.hook_timeout_seconds


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


def merge_hooks(
    data: dict[str, Any], hook_path: Path | None, socket: str = "", timeout: float | None = None
) -> dict[str, Any]:
    """``data`` with exactly one memd entry per event (updated in place when one exists)."""
    new = copy.deepcopy(data)
    hooks = new.setdefault("hooks", {})
    for event in HOOK_EVENTS:
        wanted = hook_entry(hook_path, event, socket, timeout)
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
    write_atomic(path, new_text, through_symlink=True)
    return diff, backup


def install_hooks(
    *,
    dry_run: bool = False,
    hook_path: Path | None = None,
    path: Path | None = None,
    settings: Settings | None = None,
) -> SettingsChange:
    """Merge memd's four entries. They dial ``settings``' socket (default: ``load_settings()``);
    ``hook_path`` runs that ``memd-hook`` executable instead of the fast form."""
    if settings is None:
        from memd.settings import load_settings

        settings = load_settings()
    path = path or claude_settings_path()
    data, text = read_claude_settings(path)
    socket, timeout = hook_options(settings)
    new = merge_hooks(data, hook_path, socket, timeout)
    if new == data and text is not None:
        return SettingsChange(path, False, f"hooks already installed in {path}")
    events = ", ".join(HOOK_EVENTS)
    shown = shlex.join(
        [str(hook_path)] if hook_path else hook_command_argv("EVENT", socket, timeout)[:5]
    )
    what = f"hooks ({events}) -> {shown} (socket {socket}) in {path}"
    return write_change(path, new, data, text, dry_run, ("installed", "would install"), what)


def write_change(
    path: Path,
    new: dict[str, Any],
    data: dict[str, Any],
    text: str | None,
    dry_run: bool,
    verbs: tuple[str, str],
    what: str,
) -> SettingsChange:
    """Apply a change to a Claude Code settings file (after a backup; nothing with
    ``dry_run``) and say so: "<verb> <what>", with ``verbs`` = (done, would be done)."""
    diff, backup = apply_settings(path, new, data, text, dry_run=dry_run)
    msg = f"{verbs[1] if dry_run else verbs[0]} {what}"
    if backup:
        msg += f" (backup: {backup.name})"
    return SettingsChange(path, True, msg, diff, backup)


def uninstall_hooks(*, dry_run: bool = False, path: Path | None = None) -> SettingsChange:
    path = path or claude_settings_path()
    data, text = read_claude_settings(path)
    new = remove_hooks(data)
    if new == data:
        return SettingsChange(path, False, f"no memd hooks in {path}")
    what = f"memd hooks from {path}"
    return write_change(path, new, data, text, dry_run, ("removed", "would remove"), what)


def purge_home(settings: Settings) -> Path:
    """Delete $MEMD_HOME (memories, journal, state). Refuses obviously wrong directories."""
    home = settings.home.expanduser().resolve()
    user_home = Path.home().resolve()
    if home == Path("/") or home == user_home or user_home.is_relative_to(home):
        raise UserError(f"refusing to delete {home}: it is not a memd data directory")
    if home.exists():
        shutil.rmtree(home)
    return home


# ---------------------------------------------------------------- MCP server, commands, plugin
# `memd install --mcp` registers `memd mcp` in Claude Code's user config; `--commands` writes
# /remember, /recall and /forget; the memd plugin (plugin/ in the repository) brings both and
# the hooks, so `memd install` leaves the hooks to it when it is enabled.

MCP_NAME = "memd"
PLUGIN_NAME = "memd"


def claude_json_path() -> Path:
    """Claude Code's user config holding user-scope ``mcpServers``: ``~/.claude.json``, or
    ``$CLAUDE_CONFIG_DIR/.claude.json`` when that variable is set."""
    raw = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(raw).expanduser() if raw else Path.home()) / ".claude.json"


def mcp_entry(memd_path: Path) -> dict[str, Any]:
    """What ``claude mcp add --scope user memd -- MEMD mcp`` writes."""
    return {"type": "stdio", "command": str(memd_path), "args": ["mcp"], "env": {}}


def is_memd_mcp(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and os.path.basename(entry["command"]) == "memd"
        and entry.get("args") == ["mcp"]
    )


def read_mcp_servers(path: Path) -> tuple[dict[str, Any], str | None]:
    data, text = read_claude_settings(path)
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise UserError(f'{path}: "mcpServers" is not a JSON object; memd changed nothing')
    return data, text


def install_mcp(
    *, dry_run: bool = False, memd_path: Path | None = None, path: Path | None = None
) -> SettingsChange:
    """Register `memd mcp` as the user-scope MCP server ``memd`` (other servers are kept)."""
    path = path or claude_json_path()
    data, text = read_mcp_servers(path)
    wanted = mcp_entry(memd_path or find_executable("memd"))
    current = (data.get("mcpServers") or {}).get(MCP_NAME)
    if current == wanted:
        return SettingsChange(path, False, f"MCP server {MCP_NAME!r} already registered in {path}")
    if current is not None and not is_memd_mcp(current):
        raise UserError(
            f"{path}: an MCP server named {MCP_NAME!r} exists and is not memd's; "
            "memd changed nothing (rename or remove it first)"
        )
    new = copy.deepcopy(data)
    new.setdefault("mcpServers", {})[MCP_NAME] = wanted
    what = f"MCP server {MCP_NAME!r} ({wanted['command']} mcp) in {path}"
    return write_change(path, new, data, text, dry_run, ("registered", "would register"), what)


def uninstall_mcp(*, dry_run: bool = False, path: Path | None = None) -> SettingsChange:
    path = path or claude_json_path()
    data, text = read_mcp_servers(path)
    if not is_memd_mcp((data.get("mcpServers") or {}).get(MCP_NAME)):
        return SettingsChange(path, False, f"no memd MCP server in {path}")
    new = copy.deepcopy(data)
    del new["mcpServers"][MCP_NAME]
    what = f"MCP server {MCP_NAME!r} from {path}"
    return write_change(path, new, data, text, dry_run, ("removed", "would remove"), what)


def enabled_plugin(data: dict[str, Any]) -> str | None:
    """The key of the enabled memd plugin in settings.json (``memd@<marketplace>``), if any."""
    plugins = data.get("enabledPlugins")
    if isinstance(plugins, dict):
        for key, on in plugins.items():
            if isinstance(key, str) and key.split("@")[0] == PLUGIN_NAME and on is True:
                return key
    return None


def has_memd_hooks(data: dict[str, Any]) -> bool:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(
        is_memd_entry(entry)
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for entry in group["hooks"]
    )


def plugin_owning_hooks(path: Path | None = None) -> str | None:
    """The enabled memd plugin, when there is one: then `memd install` adds no hooks."""
    data, _ = read_claude_settings(path or claude_settings_path())
    return enabled_plugin(data)


def install_commands(*, dry_run: bool = False, directory: Path | None = None) -> SettingsChange:
    """Write /remember, /recall and /forget to ``~/.claude/commands`` (memd's files only)."""
    from memd.setup.claude_commands import COMMANDS, render

    directory = directory or claude_dir() / "commands"
    written = []
    for name in COMMANDS:
        target = directory / f"{name}.md"
        text = render(name, f"mcp__{MCP_NAME}__")
        try:
            if target.read_text(encoding="utf-8") == text:
                continue
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read {target}: {exc}") from exc
        if not dry_run:
            if target.exists():
                backup_file(target)
            write_atomic(target, text, mode=0o644, through_symlink=True)
        written.append(f"/{name}")
    if not written:
        return SettingsChange(directory, False, f"commands already installed in {directory}")
    verb = "would install" if dry_run else "installed"
    return SettingsChange(directory, True, f"{verb} {', '.join(written)} in {directory}")


def uninstall_commands(*, dry_run: bool = False, directory: Path | None = None) -> SettingsChange:
    """Remove memd's command files (only those still exactly as memd wrote them)."""
    from memd.setup.claude_commands import COMMANDS, render

    directory = directory or claude_dir() / "commands"
    removed = []
    for name in COMMANDS:
        target = directory / f"{name}.md"
        try:
            ours = target.read_text(encoding="utf-8") == render(name, f"mcp__{MCP_NAME}__")
        except (OSError, UnicodeDecodeError):
            continue
        if ours:
            if not dry_run:
                target.unlink()
            removed.append(f"/{name}")
    if not removed:
        return SettingsChange(directory, False, f"no memd commands in {directory}")
    verb = "would remove" if dry_run else "removed"
    return SettingsChange(directory, True, f"{verb} {', '.join(removed)} from {directory}")
