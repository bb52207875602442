"""Fixtures of the real-client tests; the harness itself is in claude_harness.py."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_harness import VERSIONS, World, install_claude, unavailable


@pytest.fixture(
    scope="session", params=VERSIONS, ids=[f"cc{v.replace('.', '_')}" for v in VERSIONS]
)
def claude_bin(request: pytest.FixtureRequest) -> Path:
    return install_claude(request.param)


@pytest.fixture(scope="session")
def netns_ok() -> None:
    for tool in ("unshare", "nsenter", "ip"):
        if not shutil.which(tool):
            unavailable(f"`{tool}` is missing: no private network namespace for the CLI")
    probe = subprocess.run(
        ["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        unavailable(f"no private network namespace here (unshare -n: {probe.stderr.strip()})")


@pytest.fixture
def world(claude_bin: Path, netns_ok: None) -> Iterator[World]:
    w = World(claude_bin)
    try:
        w.start_daemon()
        yield w
    finally:
        w.close()
