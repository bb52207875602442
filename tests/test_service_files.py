"""The systemd unit and the launchd plist in the repository, and what install renders from them."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
from pathlib import Path

import pytest

from memd.settings import load_settings
from memd.setup import install
from memd.setup import service as user_service

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "systemd" / "memd.service"
PLIST = ROOT / "launchd" / "dev.memd.plist"

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed (apt-get install -y systemd)",
)


def unit_directives(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit as {section: {key: [values]}} (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def verify(unit: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify --user`, which needs a private runtime dir to start its manager."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def assert_clean(proc: subprocess.CompletedProcess[str], unit: Path) -> None:
    # verify exits 0 even for ignored bad values and only prints a warning: count those too.
    mentions = [line for line in proc.stderr.splitlines() if unit.name in line]
    assert proc.returncode == 0, proc.stderr
    assert mentions == [], proc.stderr


def test_repo_unit_is_the_template_install_renders() -> None:
    assert UNIT.read_text() == user_service.SYSTEMD_TEMPLATE


def test_repo_unit_has_restart_backoff_and_hardening() -> None:
    unit = unit_directives(UNIT.read_text())
    service = unit["Service"]
    assert service["ExecStart"] == ["%h/.local/bin/memd serve"]
    assert service["Restart"] == ["on-failure"]
    assert service["RestartSec"] == ["2"]
    assert unit["Unit"]["StartLimitIntervalSec"] == ["300"]
    assert unit["Unit"]["StartLimitBurst"] == ["5"]
    assert service["NoNewPrivileges"] == ["yes"]
    assert service["PrivateTmp"] == ["yes"]
    assert service["ProtectSystem"] == ["strict"]
    assert service["ProtectHome"] == ["read-only"]
    assert service["ReadWritePaths"] == ["-%h/.local/share/memd -%h/.config/memd"]
    assert unit["Install"]["WantedBy"] == ["default.target"]
    # WantedBy=default.target plus After=default.target would be an ordering cycle.
    assert "After" not in unit["Unit"]


def test_rendered_unit_escapes_paths_and_environment(tmp_path: Path) -> None:
    memd = tmp_path / "a dir" / "memd"
    text = user_service.render_unit(
        memd,
        {"MEMD_HOME": "/data/100% mine", "MEMD_EXTRACTOR": "heuristic"},
        [Path("/data/100% mine")],
    )
    service = unit_directives(text)["Service"]
    assert service["ExecStart"] == [f'"{memd}" serve']
    assert service["Environment"] == ['"MEMD_HOME=/data/100%% mine"', "MEMD_EXTRACTOR=heuristic"]
    assert service["ReadWritePaths"] == ['"-/data/100%% mine"']


@needs_systemd_analyze
def test_repo_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    # The repo file runs %h/.local/bin/memd, and verify checks that the binary exists.
    fake_memd = Path.home() / ".local" / "bin" / "memd"
    fake_memd.parent.mkdir(parents=True)
    fake_memd.write_text("#!/bin/sh\nexit 0\n")
    fake_memd.chmod(0o755)
    unit = tmp_path / "units" / "memd.service"
    unit.parent.mkdir()
    shutil.copyfile(UNIT, unit)
    assert_clean(verify(unit, tmp_path), unit)


@needs_systemd_analyze
def test_installed_unit_passes_systemd_analyze_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMD_HOME", str(tmp_path / "data with space"))
    monkeypatch.setenv("MEMD_SESSION_IDLE_SECONDS", "300")
    monkeypatch.setenv("MEMD_SOCKET", "/run/user/memd-test/memd.sock")
    settings = load_settings()
    memd = install.find_executable("memd")  # the real console script of this venv
    text = user_service.render_unit(
        memd, user_service.service_environment(settings), user_service.writable_paths(settings)
    )
    unit = tmp_path / "units" / "memd.service"
    unit.parent.mkdir()
    unit.write_text(text)
    assert_clean(verify(unit, tmp_path), unit)
    service = unit_directives(text)["Service"]
    assert service["ExecStart"] == [f"{memd} serve"]
    assert "MEMD_SESSION_IDLE_SECONDS=300" in service["Environment"]
    assert service["ReadWritePaths"] == [
        f'"-{tmp_path}/data with space" -{Path.home()}/.config/memd -/run/user/memd-test'
    ]


@needs_systemd_analyze
def test_verify_catches_a_bad_unit(tmp_path: Path) -> None:
    """The check above is not vacuous: a broken value and a missing binary are reported."""
    unit = tmp_path / "units" / "memd.service"
    unit.parent.mkdir()
    bad = user_service.render_unit(Path("/nonexistent/memd"), {}, [tmp_path])
    unit.write_text(bad.replace("RestartSec=2", "RestartSec=soon"))
    proc = verify(unit, tmp_path)
    assert "soon" in proc.stderr
    assert "/nonexistent/memd" in proc.stderr


def test_repo_plist_parses_and_has_the_keys() -> None:
    doc = plistlib.loads(PLIST.read_bytes())
    assert doc["Label"] == user_service.LABEL == "dev.memd"
    assert doc["ProgramArguments"][1:] == ["serve"]
    assert doc["ProgramArguments"][0].endswith("/memd")
    assert doc["RunAtLoad"] is True
    assert doc["KeepAlive"] == {"SuccessfulExit": False}  # restart on crash only
    assert doc["StandardOutPath"].endswith(".log")
    assert doc["StandardErrorPath"].endswith(".log")
    assert isinstance(doc["EnvironmentVariables"], dict)
    assert "MEMD_HOME" in doc["EnvironmentVariables"]


def test_repo_plist_matches_what_install_renders() -> None:
    doc = plistlib.loads(PLIST.read_bytes())
    rendered = user_service.plist_document(
        Path("/Users/you/.local/bin/memd"),
        Path("/Users/you"),
        {"MEMD_HOME": "/Users/you/Library/Application Support/memd"},
    )
    assert doc == rendered


def test_rendered_plist_round_trips(tmp_path: Path) -> None:
    memd = tmp_path / "venv with space" / "bin" / "memd"
    env = {"MEMD_HOME": "/x/y & <z>", "MEMD_EXTRACTOR": "heuristic"}
    text = user_service.render_plist(memd, tmp_path, env)
    doc = plistlib.loads(text.encode())
    assert doc["ProgramArguments"] == [str(memd), "serve"]
    assert doc["EnvironmentVariables"] == env
    assert doc["StandardErrorPath"] == str(tmp_path / "Library" / "Logs" / "memd" / "memd.err.log")
    if shutil.which("plutil"):  # macOS only
        path = tmp_path / "dev.memd.plist"
        path.write_text(text)
        subprocess.run(["plutil", "-lint", str(path)], check=True, capture_output=True)


def test_private_tmp_is_off_when_the_socket_lives_in_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMD_HOME", "/srv/memd")  # only computed, never created
    assert not user_service.uses_shared_tmp(load_settings())
    monkeypatch.setenv("MEMD_SOCKET", "/tmp/memd-test-sock/memd.sock")
    settings = load_settings()
    assert user_service.uses_shared_tmp(settings)
    text = user_service.render_unit(
        Path("/usr/bin/memd"), {}, user_service.writable_paths(settings), private_tmp=False
    )
    service = unit_directives(text)["Service"]
    assert "PrivateTmp" not in service
    assert service["ProtectSystem"] == ["strict"]
