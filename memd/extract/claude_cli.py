"""The ``claude-cli`` extractor: ``claude -p`` with the user's login, fully guarded.

Guards (docs/claude-code.md): hooks disabled through ``--settings '{"disableAllHooks": true}'``,
``--no-session-persistence`` (no transcript of our own run), ``--tools ""``, ``--max-turns 1``,
a JSON schema, ``MEMD_DISABLE=1`` in the child's environment (so even a hook that still runs is
a no-op), and never ``--bare``. The child runs in its own process group; on timeout the whole
group is killed, so no orphans remain. At most ``claude_cli_concurrency`` children run at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.errors import ExtractionError
from memd.extract.base import BackendStats, KeyValueState, TokenLedger, usage_tokens
from memd.extract.prompt import extract_with_llm
from memd.extract.redact import redact
from memd.extract.reply import CANDIDATE_SCHEMA, load_lenient
from memd.models import Candidate, Segment

if TYPE_CHECKING:
    from memd.settings import Settings

REAP_SECONDS = 5.0
HOOK_SETTINGS = json.dumps({"disableAllHooks": True})


def claude_command(executable: str, model: str) -> list[str]:
    """The exact, guarded ``claude -p`` command line (the prompt goes on stdin)."""
    return [
        executable,
        "-p",
        "--output-format",
        "json",
        "--json-schema",
        json.dumps(CANDIDATE_SCHEMA),
        "--model",
        model,
        "--max-turns",
        "1",
        "--tools",
        "",
        "--settings",
        HOOK_SETTINGS,
        "--no-session-persistence",
    ]


def child_environment() -> dict[str, str]:
    env = dict(os.environ)
    env["MEMD_DISABLE"] = "1"  # memd's own hooks do nothing in this child, whatever runs
    return env


def kill_group(pgid: int) -> bool:
    """SIGKILL every process in the group; False when the group was already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class ClaudeCliExtractor:
    """Extraction through ``claude -p``: timeout, process-group kill, concurrency limit, budget."""

    name = "claude-cli"

    def __init__(self, settings: Settings, state: KeyValueState | None = None) -> None:
        self.executable = settings.claude_cli_path
        self.model = settings.claude_cli_model
        self.timeout = settings.llm_timeout_seconds
        self.workdir = Path(settings.home) / "claude-cli"
        self.extra_patterns = tuple(settings.redact_patterns)
        self.slots = threading.BoundedSemaphore(settings.claude_cli_concurrency)
        self.ledger = TokenLedger(settings.llm_daily_token_budget, state)
        self.counters = BackendStats(self.name, self.ledger)
        self.running = 0
        self.timeouts = 0

    def stats(self) -> dict[str, Any]:
        out = self.counters.as_dict()
        out.update(model=self.model, running=self.running, timeouts=self.timeouts)
        return out

    def command(self) -> list[str]:
        return claude_command(self.executable, self.model)

    def extract(self, segment: Segment) -> list[Candidate]:
        def ask(prompt: str) -> Any:
            with self.slots:
                reply = self.run(prompt)
            return self.payload(reply)

        return extract_with_llm(segment, ask, self.ledger, self.counters, self.extra_patterns)

    def run(self, prompt: str) -> dict[str, Any]:
        """Run one guarded child; its parsed JSON reply. Nothing it started outlives it."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.counters.calls += 1
        try:
            proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_environment(),
                cwd=self.workdir,
                start_new_session=True,  # its own process group: killable as a whole
            )
        except OSError as exc:
            raise ExtractionError(f"claude-cli: cannot run {self.executable!r}: {exc}") from exc
        self.running += 1
        try:
            try:
                out, err = proc.communicate(prompt.encode("utf-8"), timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.timeouts += 1
                kill_group(proc.pid)
                self.reap(proc)
                raise ExtractionError(
                    f"claude-cli: no answer within {self.timeout:g}s; killed its process group"
                ) from None
        finally:
            kill_group(proc.pid)  # anything the child left behind in its group
            if proc.poll() is None:
                proc.kill()
                self.reap(proc)
            self.running -= 1
        if proc.returncode != 0:
            tail = redact(err.decode("utf-8", "replace").strip()[-300:] or out.decode()[-300:])
            raise ExtractionError(f"claude-cli: exit {proc.returncode}: {tail}")
        return self.reply(out.decode("utf-8", "replace"))

    @staticmethod
    def reap(proc: subprocess.Popen[bytes]) -> None:
        try:
            proc.communicate(timeout=REAP_SECONDS)
        except subprocess.TimeoutExpired:  # a descendant escaped the group and holds a pipe
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait(timeout=REAP_SECONDS)

    def reply(self, stdout: str) -> dict[str, Any]:
        """The result object from ``--output-format json`` (a list of events is accepted too)."""
        try:
            data = load_lenient(stdout)
        except ExtractionError as exc:
            raise ExtractionError(f"claude-cli: output is not JSON: {exc}") from exc
        if isinstance(data, list):
            results = [d for d in data if isinstance(d, dict) and d.get("type") == "result"]
            data = results[-1] if results else {}
        if not isinstance(data, dict) or not data:
            raise ExtractionError("claude-cli: output holds no result object")
        self.counters.record_usage(*usage_tokens(data.get("usage")))
        if data.get("is_error"):
            message = redact(str(data.get("result") or data.get("subtype") or "error"))[:300]
            raise ExtractionError(f"claude-cli: the run failed: {message}")
        return data

    @staticmethod
    def payload(reply: dict[str, Any]) -> Any:
        structured = reply.get("structured_output")
        if structured:
            return structured
        result = reply.get("result")
        if result:
            return result
        raise ExtractionError("claude-cli: neither structured_output nor result in the reply")
