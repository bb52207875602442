"""Shared fixtures. Nothing here may touch the real home directory or ~/.claude."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("MEMD_TEST_SHARED") or Path(__file__).resolve().parents[2] / "shared")
"""../shared next to the repository; MEMD_TEST_SHARED points elsewhere (e.g. from a worktree)."""


@pytest.fixture(autouse=True)
def env_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point every memd path, and HOME itself, at tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("MEMD_HOME", str(tmp_path / "memd"))
    monkeypatch.setenv("MEMD_TRANSCRIPTS_DIR", str(home / ".claude" / "projects"))
    monkeypatch.setenv("MEMD_CONFIG", str(home / ".config" / "memd" / "memd.toml"))
    for name in list(os.environ):
        if name.startswith("MEMD_") and name not in {
            "MEMD_HOME",
            "MEMD_TRANSCRIPTS_DIR",
            "MEMD_CONFIG",
        }:
            monkeypatch.delenv(name)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield


@pytest.fixture
def short_socket() -> Iterator[str]:
    """A socket path short enough for AF_UNIX (tmp_path can exceed 104 bytes)."""
    d = tempfile.mkdtemp(prefix="memd-", dir="/tmp")
    os.chmod(d, 0o700)
    path = os.path.join(d, "m.sock")
    yield path
    if os.path.exists(path):
        os.unlink(path)
    os.rmdir(d)


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"../shared is absent ({SHARED}); fixture-based tests need it")
    return SHARED
