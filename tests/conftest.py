"""Shared fixtures. Nothing here may touch the real home directory or ~/.claude."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from memd.daemon.app import App
    from memd.daemon.pipeline import Pipeline


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
def app() -> Iterator[App]:
    """memd's App on a store under this test's home (see ``env_setup``), as the daemon's writer."""
    from memd.daemon.app import App
    from memd.settings import load_settings

    opened = App(load_settings()).open(writer=True)
    yield opened
    opened.close()


@pytest.fixture
def pipeline(app: App, tmp_path: Path) -> Iterator[Pipeline]:
    """The daemon's extraction pipeline over ``app``, with its own state database."""
    from memd.daemon.pipeline import Pipeline
    from memd.state import State

    state = State(tmp_path / "state.db")
    yield Pipeline(app, state, app.settings)
    state.close()


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


FIXTURE_ROOT = Path(__file__).resolve().parent
"""Holds ``fixtures/transcripts``: the real Claude Code transcripts of ../shared, copied with
their licences and SOURCES.md (MIT): the tests do not read ../shared."""


@pytest.fixture
def fixture_root() -> Path:
    return FIXTURE_ROOT
