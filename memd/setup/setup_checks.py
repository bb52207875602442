"""`memd doctor`'s checks of what `memd install` sets up: Claude Code's hooks (or the memd plugin
that runs them), the MCP server and the user service, with their repairs and the commands that
start or restart the daemon.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from memd import hook
from memd.errors import MemdError
from memd.hook import locate as hook_locate
from memd.hook import parse_args as hook_parse_args
from memd.settings import Settings
from memd.setup import install
from memd.setup import service as user_service
from memd.setup.check import Check, q


class SetupChecks:
    """The checks, repairs and fix commands of :class:`memd.setup.doctor.Doctor` about the setup."""

    settings: Settings
    system: str
    status: dict[str, Any] | None

    def check_hooks(self) -> Check:
        path = install.claude_settings_path()
        try:
            data, _ = install.read_claude_settings(path)
        except MemdError as exc:
            return Check("hooks", "fail", str(exc), f"${{EDITOR:-vi}} {q(path)}")
        hooks = data.get("hooks") or {}
        problems: list[str] = []
        targets: set[str] = set()
        commands: dict[str, str] = {}
        want_socket, want_timeout = install.hook_options(self.settings)
        for event, (arg, _timeout) in install.HOOK_EVENTS.items():
            entries = [
                entry
                for group in hooks.get(event) or []
                if isinstance(group, dict) and isinstance(group.get("hooks"), list)
                for entry in group["hooks"]
                if install.is_memd_entry(entry)
            ]
            if not entries:
                problems.append(f"{event} missing")
                continue
            commands[event] = entries[0]["command"]
            argv = install.hook_argv(entries[0]) or []
            words = install.hook_words(argv) or []
            runs = [Path(argv[0]), *[Path(w) for w in argv[1 : len(argv) - len(words)][-1:]]]
            targets.add(shlex.join(str(p) for p in runs))
            program = runs[0]
            parsed = hook_parse_args(words)
            if (
                not program.is_absolute()
                or not program.is_file()
                or not os.access(program, os.X_OK)
            ):
                problems.append(f"{event} runs {program}, which is not an executable file")
            elif len(runs) > 1 and not runs[1].is_file():
                problems.append(f"{event} runs {runs[1]}, which does not exist")
            elif parsed is None or parsed[0] != arg:
                problems.append(f"{event} passes {words!r} instead of {arg!r}")
            else:
                dials = parsed[1] or hook_locate(os.environ.get)[0]
                if os.path.normpath(dials) != os.path.normpath(want_socket):
                    problems.append(
                        f"{event} dials {dials} but the daemon listens on {want_socket}"
                    )
        if problems:
            return Check("hooks", "fail", f"{path}: " + "; ".join(problems), "memd install --hooks")
        if data.get("disableAllHooks") is True:
            return Check(
                "hooks",
                "warn",
                f'{path} has "disableAllHooks": true, so Claude Code runs no hook',
                f"${{EDITOR:-vi}} {q(path)}",
            )
        detail = f"{len(install.HOOK_EVENTS)} events -> {', '.join(sorted(targets))}"
        wanted = {
            event: install.hook_entry(None, event, want_socket, want_timeout)["command"]
            for event in install.HOOK_EVENTS
        }
        if commands != wanted:
            ours = shlex.join(hook.command_argv("EVENT", want_socket, want_timeout)[:5])
            return Check(
                "hooks",
                "warn",
                f"{detail}; this installation's hook is {ours} --socket {want_socket}",
                "memd install --hooks",
            )
        return Check("hooks", "ok", f"{detail} (socket {want_socket})")

    def check_hooks_or_plugin(self) -> Check:
        """The hooks check, unless the enabled memd plugin runs the hooks (then check that)."""
        path = install.claude_settings_path()
        try:
            data, _ = install.read_claude_settings(path)
        except MemdError:
            return self.check_hooks()  # it reports the bad file
        plugin = install.enabled_plugin(data)
        if not plugin:
            return self.check_hooks()
        if install.has_memd_hooks(data):
            return Check(
                "hooks",
                "warn",
                f"the memd plugin ({plugin}) and {path} both register memd's hooks; "
                "the plugin's stand down",
                "memd uninstall --hooks",
            )
        if shutil.which("memd-hook") is None:
            return Check(
                "hooks",
                "fail",
                f"the memd plugin ({plugin}) runs `memd-hook`, which is not on PATH",
                f"{sys.executable} -m pip install memd (or put {Path(sys.executable).parent} on PATH)",
            )
        return Check(
            "hooks", "ok", f"from the memd plugin ({plugin}) -> {shutil.which('memd-hook')}"
        )

    def check_mcp(self) -> Check:
        """`memd mcp` registered for Claude Code (optional: the hooks work without it)."""
        path = install.claude_json_path()
        try:
            data, _ = install.read_mcp_servers(path)
            settings, _ = install.read_claude_settings(install.claude_settings_path())
        except MemdError as exc:
            return Check("mcp", "warn", str(exc), "")
        plugin = install.enabled_plugin(settings)
        entry = (data.get("mcpServers") or {}).get(install.MCP_NAME)
        if plugin and not entry:
            return Check("mcp", "ok", f"from the memd plugin ({plugin})")
        if entry is None:
            return Check("mcp", "ok", f"not registered in {path} (optional)", "memd install --mcp")
        command = Path(str(entry.get("command", "")))
        if not install.is_memd_mcp(entry) or not command.is_file():
            return Check(
                "mcp", "fail", f"{path}: {install.MCP_NAME!r} runs {entry!r}", "memd install --mcp"
            )
        return Check("mcp", "ok", f"{command} mcp, registered in {path}")

    def check_service(self) -> Check:
        """The user service (:meth:`service_state`); while a daemon answers outside it (`memd
        serve` in a terminal, as the README's quick start runs it), a missing or stopped service
        is a note with the command that installs it, not a failure."""
        check = self.service_state()
        pid = (self.status or {}).get("pid")
        if check.level != "fail" or pid is None or "not an executable file" in check.detail:
            return check
        return Check(
            "service",
            "note",
            f"{check.detail}; the daemon (pid {pid}) runs outside it, e.g. `memd serve` in a "
            "terminal: fine, but it stops with that terminal and does not start at login",
            check.fix,
        )

    def service_state(self) -> Check:
        try:
            kind = user_service.service_system(self.system)
        except MemdError as exc:
            return Check("service", "warn", str(exc), "memd serve")
        if kind == "systemd":
            path = user_service.unit_path()
            if not path.exists():
                return Check("service", "fail", f"no unit at {path}", "memd install --service")
            stale = stale_program(kind)
            if stale:
                return stale
            if not user_service.user_bus_works():
                return Check(
                    "service",
                    "warn",
                    f"{path} exists; enabled state unknown (no systemd user bus)",
                    "systemctl --user enable --now memd.service",
                )
            state = user_service.run(
                ["systemctl", "--user", "is-enabled", user_service.UNIT_NAME], 10
            )
            if state.stdout.strip() == "enabled":
                active = user_service.run(
                    ["systemctl", "--user", "is-active", user_service.UNIT_NAME], 10
                )
                shown = active.stdout.strip() or "unknown"
                return Check("service", "ok", f"{user_service.UNIT_NAME} is enabled ({shown})")
            return Check(
                "service",
                "fail",
                f"{user_service.UNIT_NAME} is {state.stdout.strip() or 'not enabled'}",
                "systemctl --user enable --now memd.service",
            )
        path = user_service.plist_path()
        if not path.exists():
            return Check("service", "fail", f"no agent at {path}", "memd install --service")
        stale = stale_program(kind)
        if stale:
            return stale
        if not shutil.which("launchctl"):
            return Check("service", "warn", f"{path} exists; state unknown", "")
        target = f"{user_service.gui_domain()}/{user_service.LABEL}"
        if user_service.run(["launchctl", "print", target], 10).returncode == 0:
            return Check("service", "ok", f"{user_service.LABEL} is loaded")
        return Check(
            "service",
            "fail",
            f"{user_service.LABEL} is not loaded",
            f"launchctl bootstrap {user_service.gui_domain()} {q(path)}",
        )

    # ------------------------------------------------------------ repairs

    def repair_hooks(self) -> str:
        return install.install_hooks(settings=self.settings).message

    def repair_service(self) -> str:
        change = user_service.install_service(self.settings, system=self.system)
        return "; ".join(change.messages + [f"run: {c}" for c in change.todo])

    def repair_daemon(self) -> str:
        kind = user_service.service_system(self.system)
        if (
            kind == "systemd"
            and user_service.unit_path().exists()
            and user_service.user_bus_works()
        ):
            user_service.run(["systemctl", "--user", "restart", user_service.UNIT_NAME])
        elif kind == "launchd" and user_service.plist_path().exists() and shutil.which("launchctl"):
            user_service.run(
                [
                    "launchctl",
                    "kickstart",
                    "-k",
                    f"{user_service.gui_domain()}/{user_service.LABEL}",
                ]
            )
        else:
            return ""
        time.sleep(1.0)  # give it a moment to bind the socket before the re-check
        return "restarted the service"

    # ------------------------------------------------------------ fix commands

    def start_command(self) -> str:
        kind = safe_kind(self.system)
        if kind == "systemd" and user_service.unit_path().exists():
            return "systemctl --user start memd.service"
        if kind == "launchd" and user_service.plist_path().exists():
            return f"launchctl kickstart {user_service.gui_domain()}/{user_service.LABEL}"
        return "memd install --service"

    def restart_command(self, pid: Any) -> str:
        kind = safe_kind(self.system)
        if kind == "systemd" and user_service.unit_path().exists():
            return "systemctl --user restart memd.service"
        if kind == "launchd" and user_service.plist_path().exists():
            return f"launchctl kickstart -k {user_service.gui_domain()}/{user_service.LABEL}"
        return f"kill {pid} && memd serve" if pid else "memd serve"


def stale_program(kind: str) -> Check | None:
    """A failure when the installed service runs a memd that no longer exists (moved venv)."""
    program = user_service.installed_program(kind)
    if program is not None and program.is_file() and os.access(program, os.X_OK):
        return None
    return Check(
        "service",
        "fail",
        f"the service runs {program or '(unreadable)'}, which is not an executable file",
        "memd install --service",
    )


def safe_kind(system: str) -> str | None:
    try:
        return user_service.service_system(system)
    except MemdError:
        return None
