"""`memd upgrade`: after a package upgrade, point the hooks at this installation and restart the
service, so the daemon runs the new code (it migrates the store as it starts).

Only what the user installed is touched: hooks are rewritten when memd's entries exist and differ
from what `memd install --hooks` would write now (another venv, the old `memd-hook` console
script, another socket); the service file is refreshed and the service restarted when one is
installed. Memories are never touched here.
"""

from __future__ import annotations

import shlex
import shutil
import time
from dataclasses import dataclass, field
from typing import Any

from memd import __version__
from memd.client import DaemonClient
from memd.errors import MemdError
from memd.settings import Settings
from memd.setup import install
from memd.setup import service as user_service


@dataclass
class UpgradeReport:
    messages: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)
    """Commands the user must run (no service manager reachable, a foreground daemon)."""
    ok: bool = True


def upgrade(
    settings: Settings, *, dry_run: bool = False, system: str | None = None, wait: float = 30.0
) -> UpgradeReport:
    report = UpgradeReport()
    upgrade_hooks(settings, report, dry_run=dry_run)
    restarted = upgrade_service(settings, report, dry_run=dry_run, system=system)
    if dry_run:
        return report
    status = wait_for_daemon(settings, wait if restarted else 0.0)
    if status is None:
        if restarted:
            report.ok = False
            report.messages.append(
                f"the daemon did not answer on {settings.socket_path} within {wait:.0f} s "
                "(see `memd doctor`)"
            )
        else:
            report.messages.append("no daemon is running (start it with `memd serve`)")
    elif status.get("version") != __version__:
        report.ok = False
        pid = status.get("pid")
        report.messages.append(
            f"the daemon (pid {pid}) still runs memd {status.get('version')}, this is {__version__}"
        )
        if not restarted:
            report.todo.append(f"kill {pid}  # then start `memd serve` again")
    else:
        report.messages.append(f"the daemon runs memd {__version__} (pid {status.get('pid')})")
    return report


def upgrade_hooks(settings: Settings, report: UpgradeReport, *, dry_run: bool) -> None:
    path = install.claude_settings_path()
    data, _ = install.read_claude_settings(path)
    groups = [g for e in install.HOOK_EVENTS for g in ((data.get("hooks") or {}).get(e) or [])]
    entries = [
        entry
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for entry in group["hooks"]
        if install.is_memd_entry(entry)
    ]
    if not entries:
        report.messages.append(f"no memd hooks in {path} (`memd install --hooks` adds them)")
        return
    change = install.install_hooks(dry_run=dry_run, settings=settings)
    report.messages.append(change.message)


def upgrade_service(
    settings: Settings, report: UpgradeReport, *, dry_run: bool, system: str | None
) -> bool:
    """Refresh the installed service file and restart the service. True when it restarted."""
    try:
        kind = user_service.service_system(system)
    except MemdError as exc:
        report.messages.append(str(exc))
        return False
    path = user_service.unit_path() if kind == "systemd" else user_service.plist_path()
    if not path.exists():
        report.messages.append(f"no service installed ({path}); nothing to restart")
        return False
    change = user_service.install_service(settings, dry_run=dry_run, system=system)
    report.messages += change.messages
    report.todo += change.todo
    if change.todo:
        return False
    if kind == "systemd":
        restart = ["systemctl", "--user", "restart", user_service.UNIT_NAME]
    elif shutil.which("launchctl"):
        target = f"{user_service.gui_domain()}/{user_service.LABEL}"
        restart = ["launchctl", "kickstart", "-k", target]
    else:
        report.todo.append(f"launchctl kickstart -k gui/$(id -u)/{user_service.LABEL}")
        return False
    shown = shlex.join(restart)
    if dry_run:
        report.messages.append(f"would run: {shown}")
        return False
    if shown not in change.ran:  # install_service restarts only a changed, running unit
        proc = user_service.run(restart)
        if proc.returncode != 0:
            report.ok = False
            err = (proc.stderr or proc.stdout).strip().splitlines()
            report.messages.append(f"`{shown}` failed: {err[-1] if err else proc.returncode}")
            return False
    report.messages.append(f"ran: {shown}")
    return True


def wait_for_daemon(settings: Settings, seconds: float) -> dict[str, Any] | None:
    """The daemon's status once it answers with this version (or whatever it answered last)."""
    deadline = time.monotonic() + seconds
    last: dict[str, Any] | None = None
    while True:
        try:
            reply = dict(DaemonClient(settings, timeout=5.0).status())
            last = reply
            if reply.get("version") == __version__:
                return reply
        except MemdError:  # not answering yet, or refusing
            pass
        if time.monotonic() >= deadline:
            return last
        time.sleep(0.2)
