"""A real `memd serve` subprocess on a real Unix socket, for the daemon, server and hook tests.

The autouse env fixture is function-scoped, so a module-scoped daemon gets its own environment:
a home under ``tmp_path_factory``, an empty transcripts dir, and a short socket path in /tmp.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memd import protocol

BIN = Path(sys.executable).parent
MEMD = str(BIN / "memd")
MEMD_HOOK = str(BIN / "memd-hook")


def daemon_env(root: Path, socket_path: str, **extra: str) -> dict[str, str]:
    """An environment where every memd path points under ``root``."""
    home = root / "home"
    (home / ".claude" / "projects").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    env.update(
        {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "MEMD_HOME": str(root / "memd"),
            "MEMD_TRANSCRIPTS_DIR": str(home / ".claude" / "projects"),
            "MEMD_CONFIG": str(home / ".config" / "memd" / "memd.toml"),
            "MEMD_SOCKET": socket_path,
            "HF_HUB_OFFLINE": "1",
        }
    )
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(extra)
    return env


def short_socket_path() -> str:
    d = tempfile.mkdtemp(prefix="memd-", dir="/tmp")
    os.chmod(d, 0o700)
    return os.path.join(d, "m.sock")


def remove_socket_dir(path: str) -> None:
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


class DaemonProcess:
    """Start, talk to, and stop one `memd serve`."""

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        socket: str | None = None,
        cwd: str | None = None,
        program: str = MEMD,
    ) -> None:
        """``socket``: where it listens, when the environment does not say (a config file);
        ``cwd``: the daemon's working directory; ``program``: the `memd` it runs (and its CLI)."""
        self.program = program
        self.env = env
        self.socket = socket or env["MEMD_SOCKET"]
        self.log_path = log_path
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> DaemonProcess:
        self.log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.program, "serve", "--log-level", "DEBUG"],
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=self.log_file,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memd serve exited {self.proc.returncode}:\n{self.log()}")
            try:
                if self.request({"cmd": "ping"}, timeout=2).get("ok"):
                    return self
            except (OSError, ValueError):
                time.sleep(0.05)
        raise RuntimeError(f"memd serve did not answer within {timeout} s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def request(self, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        return protocol.request(self.socket, payload, timeout=timeout)

    def memd(self, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.program, *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def run_memd(
        self, args: list[str], input: str | None = None, cwd: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`memd ARGS` with ``input`` on stdin (an answer to a question it asks)."""
        return subprocess.run(
            [self.program, *args],
            env=self.env,
            cwd=cwd,
            input=input or "",
            capture_output=True,
            text=True,
            timeout=120,
        )

    def hook(
        self, event: str, payload: Any, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        return subprocess.run(
            [MEMD_HOOK, event],
            env=env or self.env,
            input=data,
            capture_output=True,
            text=True,
            timeout=30,
        )

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(10)
        self.log_file.close()
        return code


@contextmanager
def served(root: Path, **env: str) -> Iterator[DaemonProcess]:
    """A `memd serve` with its home under ``root`` (its ``root`` attribute, for projects) on a
    short socket, ``env`` added to its environment (``MEMD_FLUSH_SECONDS="0.3"``); stopped
    afterwards (SIGTERM: a graceful stop), and it must exit 0 and remove its socket."""
    sock = short_socket_path()
    proc = DaemonProcess(daemon_env(root, sock, **env), root / "serve.log").start()
    proc.root = root  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        code = proc.stop()
        removed = not os.path.exists(sock)
        remove_socket_dir(sock)
        assert code == 0, proc.log()
        assert removed, "the daemon left its socket behind"


def add_project(daemon: DaemonProcess, name: str, texts: list[str]) -> tuple[str, dict[str, str]]:
    """A git project ``name`` under the daemon's root holding ``texts`` as facts (added with
    `memd add`): its path, and each text's memory id."""
    path = daemon.root / name  # type: ignore[attr-defined]
    (path / ".git").mkdir(parents=True, exist_ok=True)
    ids = {}
    for text in texts:
        out = daemon.memd("add", text, "--project", str(path), "--json", "--kind", "fact")
        assert out.returncode == 0, out.stderr
        ids[text] = json.loads(out.stdout)["memory"]["id"]
    return str(path), ids
