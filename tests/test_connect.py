"""`memd install --mcp / --commands`, the plugin in plugin/, and how they and the hooks coexist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memd.cli import main
from memd.errors import UserError
from memd.settings import load_settings
from memd.setup import install
from memd.setup.claude_commands import COMMANDS, PLUGIN_TOOL_PREFIX, render
from memd.setup.doctor import Doctor

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
MEMD = Path("/opt/tools/bin/memd")


def claude_json() -> Path:
    return Path.home() / ".claude.json"


def test_mcp_is_merged_with_a_backup_and_idempotent() -> None:
    original = {"numStartups": 3, "mcpServers": {"other": {"command": "x", "args": []}}}
    claude_json().write_text(json.dumps(original))
    change = install.install_mcp(memd_path=MEMD)
    assert change.changed and change.backup is not None
    assert json.loads(change.backup.read_text()) == original
    data = json.loads(claude_json().read_text())
    assert (
        data["numStartups"] == 3 and data["mcpServers"]["other"] == original["mcpServers"]["other"]
    )
    assert data["mcpServers"]["memd"] == {
        "type": "stdio",
        "command": str(MEMD),
        "args": ["mcp"],
        "env": {},
    }
    again = install.install_mcp(memd_path=MEMD)
    assert not again.changed and "already registered" in again.message
    assert len(list(Path.home().glob(".claude.json.memd-backup-*"))) == 1
    gone = install.uninstall_mcp()
    assert gone.changed
    assert json.loads(claude_json().read_text()) == original


def test_mcp_refuses_bad_files_and_foreign_servers() -> None:
    claude_json().write_text("{,}")
    with pytest.raises(UserError, match="invalid JSON"):
        install.install_mcp(memd_path=MEMD)
    assert claude_json().read_text() == "{,}"
    claude_json().write_text(json.dumps({"mcpServers": {"memd": {"command": "/usr/bin/other"}}}))
    with pytest.raises(UserError, match="not memd's"):
        install.install_mcp(memd_path=MEMD)
    assert not install.uninstall_mcp().changed


def test_commands_are_written_once_and_removed_only_when_unchanged() -> None:
    folder = Path.home() / ".claude" / "commands"
    change = install.install_commands()
    assert change.changed
    for name in COMMANDS:
        text = (folder / f"{name}.md").read_text()
        assert text == render(name, "mcp__memd__") and "mcp__memd__memory_" in text
        assert text.startswith("---\ndescription: ")
    assert not install.install_commands().changed
    (folder / "recall.md").write_text("my own recall\n")
    assert install.install_commands().changed  # restored, the user's file backed up
    assert [p.read_text() for p in folder.glob("recall.md.memd-backup-*")] == ["my own recall\n"]
    (folder / "forget.md").write_text("edited by the user\n")
    removed = install.uninstall_commands()
    assert "/remember" in removed.message and "/forget" not in removed.message
    assert (folder / "forget.md").read_text() == "edited by the user\n"


def test_plugin_files_match_memd() -> None:
    for name in COMMANDS:
        assert (PLUGIN / "commands" / f"{name}.md").read_text() == render(name, PLUGIN_TOOL_PREFIX)
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(install.HOOK_EVENTS)
    for event, (arg, timeout) in install.HOOK_EVENTS.items():
        (entry,) = hooks[event][0]["hooks"]
        assert entry["command"].endswith(f'/bin/memd-plugin-hook" {arg}')
        assert entry["timeout"] == timeout
    mcp = json.loads((PLUGIN / ".mcp.json").read_text())
    assert mcp == {"mcpServers": {"memd": {"command": "memd", "args": ["mcp"]}}}
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == install.PLUGIN_NAME


def run_plugin_hook(event: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The plugin's hook script with a fake `memd-hook` on PATH that records its call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "memd-hook"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/called\ncat > /dev/null\necho ctx\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(
        [str(PLUGIN / "bin" / "memd-plugin-hook"), event],
        input='{"session_id": "s"}',
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


def test_plugin_hook_runs_memd_hook_or_stands_down(tmp_path: Path) -> None:
    out = run_plugin_hook("user-prompt-submit", tmp_path)
    assert (out.returncode, out.stdout) == (0, "ctx\n")
    assert (tmp_path / "called").read_text() == "user-prompt-submit\n"
    # `memd install` registered the hooks too: the plugin's stand down and say so once.
    install.install_hooks(hook_path=Path("/opt/tools/bin/memd-hook"))
    for event in ("user-prompt-submit", "stop"):
        out = run_plugin_hook(event, tmp_path)
        assert (out.returncode, out.stdout) == (0, "")
    out = run_plugin_hook("session-start", tmp_path)
    assert out.returncode == 0 and "stand down" in json.loads(out.stdout)["systemMessage"]
    assert (tmp_path / "called").read_text() == "user-prompt-submit\n"


def test_install_leaves_hooks_to_an_enabled_plugin() -> None:
    settings = install.claude_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enabledPlugins": {"memd@local": True}}))
    result = CliRunner().invoke(main, ["install", "--hooks"])
    assert result.exit_code == 0, result.output
    assert "memd plugin (memd@local) is enabled" in result.output
    assert json.loads(settings.read_text()) == {"enabledPlugins": {"memd@local": True}}


def test_doctor_checks_whichever_is_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")
    doctor = Doctor(load_settings())
    settings = install.claude_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    assert doctor.check_hooks_or_plugin().level == "fail"  # neither
    settings.write_text(json.dumps({"enabledPlugins": {"memd@local": True}}))
    check = doctor.check_hooks_or_plugin()
    assert check.level == "ok" and "memd plugin (memd@local)" in check.detail
    assert "plugin" in doctor.check_mcp().detail
    install.install_hooks()
    check = doctor.check_hooks_or_plugin()
    assert check.level == "warn" and check.fix == "memd uninstall --hooks"
    settings.write_text(json.dumps({"enabledPlugins": {"memd@local": False}}))
    install.install_hooks()
    assert doctor.check_hooks_or_plugin().level == "ok"
    assert "not registered" in doctor.check_mcp().detail
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the plugin would find no memd-hook
    settings.write_text(json.dumps({"enabledPlugins": {"memd@local": True}}))
    assert doctor.check_hooks_or_plugin().level == "fail"
    install.install_mcp()
    assert doctor.check_mcp().level == "ok"
