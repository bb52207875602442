"""The real-client harness (see conftest.py for the fixtures): the real Claude Code CLI, a fake Messages API, a real `memd serve`.

- The CLI comes from the npm registry, installed once per version into a cache outside the
  repository (``$MEMD_E2E_CACHE``, default ``~/.cache/memd-e2e/claude-<version>``) and reused.
- Each test gets a scratch root in /tmp: ``home/`` (the HOME of the CLI, the daemon and every
  `memd` command, so the real home is never touched), a git project in it, a real `memd serve`
  with default paths under that HOME, and memd wired in with `memd install --hooks`.
- The fake API and every CLI run share one private network namespace (``unshare -n``, loopback
  only), so nothing can leave the machine. The daemon is reached over its Unix socket, which
  works across network namespaces.
- Without node/npm, the CLI, or network namespaces these tests skip, except under ``CI=true``,
  where they fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_process import BIN, DaemonProcess

HERE = Path(__file__).resolve().parent
FAKE_API = HERE / "fake_anthropic.py"
VERSIONS = ("2.1.197", "2.1.332")
"""The version npm picks under Node 20, and the newest published one (needs Node 22 in npm's
view; its native binary runs anyway)."""
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
REAL_HOME = Path.home()
CACHE = Path(
    os.environ.get("MEMD_E2E_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or REAL_HOME / ".cache") / "memd-e2e"
)
OPUS = "claude-opus-4-8"
SONNET = "claude-sonnet-4-5-20250929"


def unavailable(reason: str) -> None:
    """Skip, or fail under CI, where the real client must run."""
    if IN_CI:
        pytest.fail(f"real-client tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


# ---------------------------------------------------------------- installing the CLI


def claude_version(path: Path) -> str:
    try:
        out = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.split()[0] if out.split() else ""


def install_claude(version: str) -> Path:
    """``claude`` of ``version`` from the cache, installed with npm on first use."""
    dest = CACHE / f"claude-{version}"
    binary = dest / "node_modules" / ".bin" / "claude"
    if claude_version(binary) == version:
        return binary
    npm = shutil.which("npm")
    if not npm:
        unavailable("npm is not installed (apt-get install nodejs npm)")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if claude_version(binary) == version:
            return binary
        partial = CACHE / f"claude-{version}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        env = {
            **os.environ,
            "HOME": str(REAL_HOME),
            "npm_config_cache": str(CACHE / "npm-cache"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        proc = subprocess.run(
            [npm, "install", "--prefix", str(partial), f"@anthropic-ai/claude-code@{version}"],
            capture_output=True,
            text=True,
            timeout=1200,
            env=env,
        )
        got = claude_version(partial / "node_modules" / ".bin" / "claude")
        if proc.returncode != 0 or got != version:
            shutil.rmtree(partial, ignore_errors=True)
            unavailable(
                f"cannot install @anthropic-ai/claude-code@{version} with npm "
                f"(exit {proc.returncode}, version {got!r}): {proc.stderr[-800:]}"
            )
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    return binary


# ---------------------------------------------------------------- the fake API


class FakeAPI:
    """fake_anthropic.py in its own network namespace; the CLI joins it with nsenter."""

    def __init__(self, root: Path) -> None:
        self.log_path = root / "api-requests.jsonl"
        self.script_path = root / "api-script.json"
        self.port_file = root / "api-port"
        self.script([])
        self.stderr = open(root / "api-stderr.log", "wb")
        self.proc = subprocess.Popen(
            [
                "unshare",
                "-n",
                "sh",
                "-c",
                'ip link set lo up && exec "$0" "$@"',
                sys.executable,
                str(FAKE_API),
                "--log",
                str(self.log_path),
                "--script",
                str(self.script_path),
                "--port-file",
                str(self.port_file),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
        )
        deadline = time.monotonic() + 20
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fake API did not start: {self.proc.poll()}")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text())

    @property
    def netns(self) -> str:
        return f"/proc/{self.proc.pid}/ns/net"

    def script(self, rules: list[dict[str, Any]]) -> None:
        tmp = self.script_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rules), encoding="utf-8")
        os.replace(tmp, self.script_path)

    def requests(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]

    def model_requests(self, since: int = 0) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/messages requests, from request number ``since`` on."""
        return [
            r["body"]
            for r in self.requests()[since:]
            if r["method"] == "POST" and r["path"].split("?")[0].endswith("/v1/messages")
        ]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.stderr.close()


# ---------------------------------------------------------------- one user's machine


def user_env(home: Path) -> dict[str, str]:
    """A shell environment of a user whose HOME is ``home``: no memd, XDG or Claude variables."""
    drop = ("MEMD_", "XDG_", "CLAUDE", "ANTHROPIC_", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        {
            "HOME": str(home),
            "PATH": f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}",
            "HF_HUB_OFFLINE": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
    )
    return env


class Run:
    """One `claude -p` run: its parsed result, stdout and stderr."""

    def __init__(self, proc: subprocess.CompletedProcess[str], output_format: str) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.events: list[dict[str, Any]] = []
        for line in proc.stdout.splitlines():
            if line.strip().startswith("{"):
                with contextlib.suppress(ValueError):
                    self.events.append(json.loads(line))
        results = [e for e in self.events if e.get("type") == "result"]
        self.result: dict[str, Any] = results[-1] if results else {}
        self.output_format = output_format

    @property
    def session_id(self) -> str:
        return str(self.result.get("session_id", ""))

    def check(self) -> Run:
        assert self.returncode == 0, f"claude exited {self.returncode}: {self.stderr[-2000:]}"
        assert self.result.get("subtype") == "success", self.stdout[-2000:]
        return self


class World:
    """A scratch HOME with a git project, a real daemon, memd's hooks, the fake API."""

    def __init__(self, claude: Path, *, hooks: bool = True) -> None:
        self.claude = claude
        self.root = Path(tempfile.mkdtemp(prefix="memd-e2e-", dir="/tmp"))
        self.home = self.root / "home"
        self.project = self.home / "work" / "shop"
        self.project.mkdir(parents=True)
        self.env = user_env(self.home)
        self.git("init", "-q", "-b", "main")
        (self.project / "README.md").write_text("# shop\n")
        self.git("add", ".")
        self.git(
            "-c", "user.email=dev@example.invalid", "-c", "user.name=dev", "commit", "-qm", "init"
        )
        self.memd_home = self.home / ".local" / "share" / "memd"
        self.socket = self.memd_home / "memd.sock"
        self.daemon: DaemonProcess | None = None
        self.api = FakeAPI(self.root)
        if hooks:
            try:
                self.memd_ok("install", "--hooks")
            except BaseException:
                self.close()  # never leave the fake API running
                raise

    # -- processes

    def git(self, *args: str) -> None:
        subprocess.run(["git", *args], cwd=self.project, env=self.env, check=True, timeout=30)

    def start_daemon(self, **extra_env: str) -> DaemonProcess:
        """A `memd serve` for this HOME; ``extra_env`` reaches the daemon process only."""
        env = {**self.env, "MEMD_SOCKET": str(self.socket), **extra_env}
        self.daemon = DaemonProcess(env, self.root / "daemon.log").start()
        return self.daemon

    def stop_daemon(self) -> None:
        if self.daemon is not None and self.daemon.proc is not None:
            self.daemon.stop()
        self.daemon = None

    def memd(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "memd"), *args],
            env=self.env,
            cwd=str(cwd or self.project),
            capture_output=True,
            text=True,
            timeout=300,
        )

    def memd_ok(self, *args: str, cwd: Path | None = None) -> str:
        proc = self.memd(*args, cwd=cwd)
        assert proc.returncode == 0, f"memd {' '.join(args)}: {proc.stdout}{proc.stderr}"
        return proc.stdout

    def memd_json(self, *args: str) -> Any:
        return json.loads(self.memd_ok(*args, "--json"))

    def claude_env(self, **extra: str) -> dict[str, str]:
        return {
            **self.env,
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.api.port}",
            "ANTHROPIC_API_KEY": "sk-fake-e2e",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # -p mode waits for MCP servers (`memd mcp` takes a few seconds to start) before
            # the first request instead of offering their tools only once connected.
            "MCP_CONNECTION_NONBLOCKING": "0",
            **extra,
        }

    def run_claude(
        self, *args: str, cwd: Path | None = None, timeout: float = 180, **extra_env: str
    ) -> subprocess.CompletedProcess[str]:
        """``claude ARGS`` inside the fake API's network namespace."""
        return subprocess.run(
            ["nsenter", f"--net={self.api.netns}", str(self.claude), *args],
            cwd=str(cwd or self.project),
            env=self.claude_env(**extra_env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def session(
        self,
        prompt: str,
        *,
        model: str | None = None,
        resume: str | None = None,
        cont: bool = False,
        tools: tuple[str, ...] = (),
        extra: tuple[str, ...] = (),
        stream: bool = False,
    ) -> Run:
        fmt = "stream-json" if stream else "json"
        args = ["-p", prompt, "--output-format", fmt]
        if stream:
            args.append("--verbose")
        if model:
            args += ["--model", model]
        if resume:
            args += ["--resume", resume]
        if cont:
            args.append("--continue")
        if tools:
            args += ["--allowedTools", ",".join(tools)]
        args += list(extra)
        return Run(self.run_claude(*args), fmt)

    # -- what happened

    def transcript(self, session_id: str) -> Path:
        found = list((self.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
        assert found, f"no transcript for session {session_id}"
        return found[0]

    def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        """One request to the daemon over its socket (what the `memd` commands send)."""
        assert self.daemon is not None, "the daemon is not running"
        reply = self.daemon.request({"cmd": cmd, **args}, timeout=300)
        assert reply.get("ok"), reply
        return reply

    def ingest(self, session_id: str) -> dict[str, Any]:
        """Read the session's transcript now, as a finished session: `memd ingest PATH`."""
        return self.request("ingest", paths=[str(self.transcript(session_id))])

    def settle(self, *session_ids: str, timeout: float = 60) -> None:
        """Extract the sessions now (`memd ingest` through the daemon), then wait until the
        daemon has no open or pending segment left."""
        for sid in session_ids:
            self.ingest(sid)
        assert self.daemon is not None
        deadline = time.monotonic() + timeout
        while True:
            sessions = self.request("status")["sessions"]
            if not sessions.get("open") and not sessions.get("pending"):
                return
            assert time.monotonic() < deadline, f"segments still waiting: {sessions}"
            time.sleep(0.1)

    def memories(self) -> list[dict[str, Any]]:
        """Every memory of every project and status: `memd list --all-projects --all`."""
        return list(self.request("list", all_projects=True, include_all=True)["memories"])

    def memd_files_contain(self, needle: str) -> list[Path]:
        """Files under the memd data directory whose bytes contain ``needle``."""
        hits = []
        raw = needle.encode()
        for path in self.memd_home.rglob("*"):
            if path.is_file() and not path.is_socket():
                try:
                    if raw in path.read_bytes():
                        hits.append(path)
                except OSError:
                    pass
        return hits

    def close(self) -> None:
        self.stop_daemon()
        self.api.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def request_text(body: dict[str, Any]) -> str:
    """Everything the model sees in one request (system prompt and messages) as one string."""
    return json.dumps({"system": body.get("system"), "messages": body.get("messages")})


def mangle(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


HOOK_CONTEXT = re.compile(
    r"(SessionStart:\w+ hook success|UserPromptSubmit hook additional context):\s*"
    r"(<memd-context>.*?</memd-context>)",
    re.DOTALL,
)


def message_texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    texts = []
    for block in content or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
    return texts


def hook_contexts(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """memd's injected blocks in one request: (hook label, block, carrier role)."""
    found = []
    for message in body.get("messages") or []:
        for text in message_texts(message):
            for m in HOOK_CONTEXT.finditer(text):
                found.append((m.group(1), m.group(2), str(message.get("role"))))
    return found


def request_for(bodies: list[dict[str, Any]], prompt: str) -> dict[str, Any]:
    """The first model request whose last user turn carries ``prompt``."""
    for body in bodies:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        if users and any(prompt in t for t in message_texts(users[-1])):
            return body
    raise AssertionError(f"no model request carried the prompt {prompt!r}")
